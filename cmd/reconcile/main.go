// Command reconcile is the daily batch check of the streaming result (SPEC §6): it recomputes every
// window from the raw log, diffs against the sink's FINAL rows and, with --apply, corrects them;
// `go run ./cmd/reconcile --help` shows its flags and exit codes. Everything lives in package reconcile.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/reconcile" // registers, through beamx, every runner and filesystem
)

func main() { os.Exit(reconcile.Main(os.Args[1:], os.Stdout, os.Stderr)) }
