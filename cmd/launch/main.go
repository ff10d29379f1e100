// Command launch runs the hourly revenue job (SPEC §6): the demo by default, a raw-log folder or a
// Pub/Sub subscription; `go run ./cmd/launch --help` shows how. Everything lives in package launch.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/launch"
)

func main() { os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr)) }
