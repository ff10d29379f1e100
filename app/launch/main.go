// Package launch is the streaming job's command, cmd/launch, as a library:
// flags parsed into a typed Options, validated before any work, the job
// wired (sources.ReadFolder or pubsub.Read → pipeline.Build → sinks.Write), run on a Beam
// runner (prism by default), stopped gracefully on SIGINT/SIGTERM, and
// summarised. cmd/launch only calls Main, so tests can do everything the
// command does.
package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/cli"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // the job failed, or its figures break conservation
	ExitUsage  = 2 // a bad flag, setting, source or sink: nothing was run
)

// Main runs the command with args (without the program name) and returns
// its exit code. Errors found before any work are one line on stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	o, err := Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "launch: %s\n", oneLine(err))
		return ExitUsage
	}
	// After the flags, as Beam requires: when a runner starts this binary as
	// a worker (--worker), Init runs the SDK harness and never returns.
	beam.Init()
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "launch: %s\n", oneLine(err))
		return ExitUsage
	}
	// beam.Init installed Beam's default logger; ours replaces it.
	slog.SetDefault(cli.NewLogger(stderr, o.LogLevel))

	// The first signal stops the job gracefully; NotifyContext then restores
	// the default handling, so a second one ends the process at once.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		cancel()
	}()

	_, err = Run(ctx, o, stdout)
	var cfg *ConfigError
	switch {
	case errors.As(err, &cfg):
		fmt.Fprintf(stderr, "launch: %s\n", oneLine(err))
		return ExitUsage
	case err != nil:
		slog.Error("run failed", "err", oneLine(err))
		return ExitFailed
	}
	return ExitOK
}
