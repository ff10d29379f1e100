// Command advise derives the stream's settings from a raw log's measured delays: `go run
// ./cmd/advise --help` shows its flags, docs/advise.md its exit codes. Everything lives in package advise.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/advise"
)

func main() { os.Exit(advise.Main(os.Args[1:], os.Stdout, os.Stderr)) }
