package reconcile

import (
	"context"
	"io"
	"log/slog"

	"github.com/revenue-stream/hourly/internal/cli"

	_ "github.com/revenue-stream/hourly/sinks/all" // every --sink backend, for this process and its in-process workers
)

// Main runs cmd/reconcile with args (without the program name) and returns its SPEC §6 exit code;
// a bad flag is one line on stderr before any work.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(cli.Command[Options]{
		Name:     "reconcile",
		Parse:    Parse,
		Usage:    Usage,
		Validate: func(o Options) (slog.Level, error) { return o.LogLevel, o.Validate() },
		Run: func(ctx context.Context, o Options, stdout io.Writer) (int, error) {
			if o.DryRun != "" {
				if err := DryRun(ctx, o, stdout); err != nil {
					return ExitError, err
				}
				return ExitClean, nil
			}
			out, err := Run(ctx, o)
			if out.RunID != "" {
				// A run that got as far as comparing has something to show.
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
