// Command reconcile is the daily batch check of the streaming result (SPEC
// §6): it recomputes every window from the raw log in a Beam batch pipeline,
// diffs against the sink's FINAL rows, writes reconcile_diffs, and with
// --apply writes material corrections as higher FINAL revisions.
//
//	go run ./cmd/reconcile --source=PATH --sink=sqlite:revenue.db [--from=.. --to=.. | --date=..] [--apply]
//
// Exit codes: 0 nothing material found, 1 material differences found (with
// --apply they were written), 2 error. The Beam runner flags (--runner,
// --endpoint, --environment_type, Dataflow's --project, --region,
// --temp_location, ...) are accepted; prism is the default runner.
//
// Everything it does is in package reconcile; this file only wires flags,
// logging and exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/app/reconcile" // registers, through beamx, every runner and filesystem
	"github.com/revenue-stream/hourly/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	// The global flag set carries the Beam runner flags the SDK registers.
	fs := flag.CommandLine
	fs.Init("reconcile", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line below
	flags := reconcile.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: reconcile --source=PATH --sink=sqlite:PATH [--from=HOUR --to=HOUR | --date=DAY] [--apply] [flags]")
			fs.PrintDefaults()
			return reconcile.ExitClean
		}
		return fail(stderr, fmt.Errorf("%w (see --help)", err))
	}
	// A distributed runner starts this binary as its worker: Init then runs
	// the worker harness and never returns, so it comes before our own
	// flags are checked (a worker is not given --source).
	beam.Init()
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0)))
	}
	o, err := flags.Options()
	if err != nil {
		return fail(stderr, err)
	}
	level, _ := flags.LogLevel() // validated by Options
	slog.SetDefault(cli.NewLogger(stderr, level))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := reconcile.Run(ctx, o)
	if out.RunID != "" {
		// A run that got as far as comparing has something to show, even if
		// a later step (the report) failed.
		if werr := reconcile.WriteSummary(stdout, out); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return fail(stderr, err)
	}
	return out.ExitCode()
}

// fail prints an error on one line (joined errors included) and returns
// exit code 2.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "reconcile: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	return reconcile.ExitError
}
