package advise

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
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
	return cli.Main(command, args, stdout, stderr)
}

// command is cmd/advise: --help, the flag table (flagTable), the settings read from several flags.
var command = cli.Command[parsed]{
	Name: "advise",
	Synopsis: `Usage: advise --source=PATH [--arrival-field=FIELD] [--dimensions=..] [--target-late-share=1%] [--target-ontime=15m] [flags]

Replays a raw log with the stream's rules and prints, for the current settings and candidate
values, what each would do; then the smallest settings meeting the targets, as cmd/launch flags.`,
	Defaults: func() parsed { return parsed{o: Defaults()} },
	Flags:    flagTable,
	Plain:    true,
	Complete: func(c *parsed, _ *cli.FlagSet) (err error) {
		if c.o.Range, err = c.r.Range(); err != nil {
			return err
		}
		if len(c.o.Segments) == 0 {
			c.o.Segments = c.o.Event.Dimensions
		}
		return nil
	},
	Validate: func(c parsed) (slog.Level, error) { return c.logLevel, c.o.Validate() },
	Run: func(ctx context.Context, c parsed, stdout io.Writer) (int, error) {
		a, err := Run(ctx, c.o, stdout)
		if err != nil {
			return ExitError, err
		}
		if !a.Recommendation.Met {
			return ExitMissed, nil
		}
		return ExitMet, nil
	},
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

// parsed is a command line read: the Options, and the flags that are not options.
type parsed struct {
	o        Options
	r        reconcile.RangeFlags
	logLevel slog.Level
}

// flagTable is cmd/advise's flag table over c: one table, which --help prints grouped, each
// default once.
func flagTable(c *parsed) []cli.Group {
	o := &c.o
	job := cli.Stream{Event: &o.Event, Watermark: &o.Watermark, Triggers: &o.Triggers, Retention: &o.DedupRetention, Usage: map[string]string{
		"ooo-bound":    "out-of-order bound",
		"idle-advance": "with every partition idle the watermark follows processing-time or holds (hold)",
		"max-future":   "quarantine events further than this ahead of their arrival",
	}}
	return []cli.Group{
		{Title: "The raw log", Flags: append([]cli.Flag{
			{Name: "source", Value: cli.String(&o.Source), Arg: "PATH",
				Usage: "raw-log folder (local, gs://BUCKET/PATH, s3://BUCKET/PATH) or a Pub/Sub archive (required)"},
			{Name: "arrival-field", Value: cli.String(&o.ArrivalField), Arg: "FIELD",
				Usage: "payload field holding each record's arrival instant (RFC 3339 or epoch ms), e.g. received_at; a Pub/Sub archive's publish times serve without it"},
			{Name: "segment-by", Value: cli.List(&o.Segments), Arg: "FIELD,...",
				Usage: "comma-separated payload fields to split the shares by", Default: "--dimensions"},
		}, c.r.Flags("measure")...)},
		{Title: "The job's settings (as cmd/launch spells them)", Flags: job.Flags("window", "ooo-bound", "idle-timeout", "idle-advance",
			"allowed-lateness", "dedup-retention", "dimensions", "max-future", "max-age", "max-line")},
		{Title: "What to try (comma-separated values; the current one is always added)", Flags: []cli.Flag{
			{Name: "try-ooo-bound", Value: durationList(&o.Try.Bounds), Usage: "bounds"},
			{Name: "try-lateness-percentiles", Value: cli.ListOf(&o.Try.LatenessPercentiles, "N,...", "number", true, strconv.Atoi, strconv.Itoa),
				Usage: "also try the bounds at these percentiles of the measured lateness"},
			{Name: "try-allowed-lateness", Value: durationList(&o.Try.Lateness), Usage: "allowed latenesses"},
			{Name: "try-dedup-retention", Value: durationList(&o.Try.Retention),
				Usage: "dedup horizons (shorter than window + lateness shows what cmd/launch refuses)"},
			{Name: "try-idle-timeout", Value: durationList(&o.Try.Idle), Usage: "idle timeouts"},
		}},
		{Title: "Targets of the recommendation", Flags: []cli.Flag{
			{Name: "target-late-share", Value: share(&o.Targets.LateSharePPM),
				Usage: "at most this share of events and of revenue in LATE revisions, e.g. 1% (none: no limit)"},
			{Name: "target-too-late-share", Value: share(&o.Targets.TooLateSharePPM),
				Usage: "at most this share too late, left to reconciliation (none: keep --allowed-lateness, the business's correction period)"},
			{Name: "target-ontime", Value: cli.Duration(&o.Targets.OnTime),
				Usage: "every window's ON_TIME row at most this long after its end (needs an arrival clock; 0: no limit)"},
			{Name: "target-residual-dups", Value: cli.Tally(&o.Targets.ResidualDups), Usage: "at most this many copies counted twice"},
		}},
		{Title: "Output", Flags: []cli.Flag{
			{Name: "report", Value: cli.String(&o.Report), Arg: "PATH",
				Usage: "also write the advice to PATH (.html, .md or .json, by extension)"},
			{Name: "job-report", Value: cli.String(&o.JobReport), Arg: "PATH",
				Usage: "a cmd/launch JSON run report (--report=run.json) whose delay histograms are shown beside the advisor's"},
			{Name: "log-level", Value: cli.Level(&c.logLevel), Usage: "debug, info, warn or error"},
		}},
	}
}

func durationList(p *[]time.Duration) cli.Value[[]time.Duration] {
	return cli.ListOf(p, "DURATION,...", "duration", false, time.ParseDuration, cli.FormatDuration)
}

// share binds a percentage ("1%", "0.5%") in parts per million, or "none" (-1).
func share(ppm *int64) cli.Value[int64] {
	return cli.Func(ppm, "SHARE", func(s string) (int64, error) {
		if s == "none" {
			return -1, nil
		}
		num, ok := strings.CutSuffix(s, "%")
		f, err := strconv.ParseFloat(num, 64)
		if !ok || err != nil || f < 0 || f > 100 || math.IsNaN(f) {
			return 0, fmt.Errorf("invalid share %q: want a percentage from 0%% to 100%%, such as 1%% or 0.5%%, or none", s)
		}
		return int64(math.Round(f * 10_000)), nil
	}, func(n int64) string {
		if n < 0 {
			return "none"
		}
		return PPM(n)
	})
}
