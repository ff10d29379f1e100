// Command reconcile is the daily batch check of the streaming result (SPEC
// §6): it recomputes every window from the raw log in a Beam batch pipeline,
// diffs against the sink's FINAL rows, writes reconcile_diffs, and with
// --apply writes material corrections as higher FINAL revisions.
//
//	go run ./cmd/reconcile --source=PATH --sink=sqlite:revenue.db [--from=.. --to=.. | --date=..] [--apply]
//
// Exit codes (SPEC §6): 0 nothing material left, 1 unexplained differences
// or unreadable sink rows (a human must look), 2 error, 3 every material
// difference explained and some not written yet (run with --apply). The Beam
// runner flags are accepted; prism is the default runner. Everything lives in
// package reconcile.
package main

import (
	"os"

	"github.com/revenue-stream/hourly/app/reconcile" // registers, through beamx, every runner and filesystem
)

func main() { os.Exit(reconcile.Main(os.Args[1:], os.Stdout, os.Stderr)) }
