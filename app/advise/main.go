package advise

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
)

// Exit codes of cmd/advise.
const (
	// ExitMet: the recommendation meets every target.
	ExitMet = 0
	// ExitMissed: no candidate meets every target.
	ExitMissed = 1
	// ExitError: a bad flag or an unreadable source.
	ExitError = cli.ExitUsage
)

// Main runs cmd/advise with args (without the program name) and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(cli.Command[*command]{
		Name:     "advise",
		Parse:    parse,
		Usage:    usage,
		Validate: func(c *command) (slog.Level, error) { return c.logLevel, c.o.Validate() },
		Run: func(ctx context.Context, c *command, stdout io.Writer) (int, error) {
			a, err := Run(ctx, c.o, stdout)
			if err != nil {
				return ExitError, err
			}
			if !a.Recommendation.Met {
				return ExitMissed, nil
			}
			return ExitMet, nil
		},
	}, args, stdout, stderr)
}

// Run analyses the log, prints the advice and writes the report.
func Run(ctx context.Context, o Options, stdout io.Writer) (*Advice, error) {
	a, err := Analyze(ctx, o)
	if err != nil {
		return nil, err
	}
	r := NewReport(a)
	if err := r.WriteText(stdout); err != nil {
		return a, fmt.Errorf("write summary: %w", err)
	}
	if o.Report != "" {
		if err := report.Write(o.Report, report.Run{Title: r.Title, Advice: r}); err != nil {
			return a, err
		}
		slog.Info("report written", "path", o.Report)
	}
	return a, nil
}
