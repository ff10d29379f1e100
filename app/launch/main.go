// Package launch is cmd/launch as a library: flags parsed into Options, checked, the job built
// (source → pipeline.Build → sink.Write), run (prism by default), stopped gracefully on
// SIGINT/SIGTERM, and summarised.
package launch

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/revenue-stream/hourly/internal/cli"

	_ "github.com/revenue-stream/hourly/sinks/all" // every --sink backend, for this process and its in-process workers
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1             // the job failed, or its figures break conservation
	ExitUsage  = cli.ExitUsage // a bad flag, setting, source or sink: nothing was run
)

// Main runs the command with args (without the program name) and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(cli.Command[Options]{
		Name:     "launch",
		Parse:    Parse,
		Usage:    Usage,
		Validate: func(o Options) (slog.Level, error) { return o.LogLevel, nil },
		Run: func(ctx context.Context, o Options, stdout io.Writer) (int, error) {
			_, err := Run(ctx, o, stdout)
			var cfg *ConfigError
			switch {
			case errors.As(err, &cfg):
				return ExitUsage, err
			case err != nil:
				slog.Error("run failed", "err", cli.OneLine(err))
				return ExitFailed, nil
			}
			return ExitOK, nil
		},
	}, args, stdout, stderr)
}
