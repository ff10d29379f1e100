package reconcile

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/revenue-stream/hourly/internal/cli"
)

// Main runs cmd/reconcile with args (without the program name) and returns
// its exit code: ExitClean, ExitMaterial, or ExitError (a bad flag is one
// line on stderr before any work).
func Main(args []string, stdout, stderr io.Writer) int {
	// The global flag set carries the Beam runner flags the SDK registers.
	fs := flag.CommandLine
	fs.Init("reconcile", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line
	flags := BindFlags(fs)
	var o Options
	return cli.Main(cli.Command{
		Name: "reconcile",
		Parse: func(args []string) error {
			if err := fs.Parse(args); err != nil && err != flag.ErrHelp {
				return fmt.Errorf("%w (see --help)", err)
			} else if err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
			}
			return nil
		},
		Usage: func(_, stderr io.Writer) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: reconcile --source=PATH --sink=sqlite:PATH [--from=HOUR --to=HOUR | --date=DAY] [--apply] [flags]")
			fs.PrintDefaults()
		},
		Validate: func() (level slog.Level, err error) {
			if o, err = flags.Options(); err != nil {
				return level, err
			}
			return flags.LogLevel() // validated by Options
		},
		Run: func(ctx context.Context, stdout io.Writer) (int, error) {
			out, err := Run(ctx, o)
			if out.RunID != "" {
				// A run that got as far as comparing has something to
				// show, even if a later step (the report) failed.
				if werr := WriteSummary(stdout, out); werr != nil && err == nil {
					err = werr
				}
			}
			if err != nil {
				return ExitError, err
			}
			return out.ExitCode(), nil
		},
	}, args, stdout, stderr)
}
