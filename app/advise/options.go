package advise

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/pipeline"
)

// Range selects the windows measured, as reconcile's --from/--to/--date do.
type Range = reconcile.Range

// Options are one advice run's settings: the job's (as cmd/launch spells them), candidates,
// targets.
type Options struct {
	// Source, ArrivalField (--arrival-field), Segments (--segment-by), Range (--from/--to or
	// --date: the windows measured; every record is still replayed), Report and JobReport are the
	// flags flagTable describes.
	Source, ArrivalField string
	Segments             []string
	Range                Range
	Report, JobReport    string

	// The job's settings: validation, watermark, windows, dedup (DedupRetention 0: window +
	// allowed lateness).
	pipeline.Stream

	// Try holds each setting's candidates; the current value is always added.
	Try Candidates
	// Targets drive the recommendation.
	Targets Targets

	// Now is the read time without an arrival clock (--max-future); zero: the wall clock.
	Now time.Time
}

// Candidates are the values tried for each setting.
type Candidates struct {
	Bounds, Lateness, Retention, Idle []time.Duration
	// LatenessPercentiles adds the measured lateness's percentiles to Bounds.
	LatenessPercentiles []int
}

// Targets are what the user asks; shares in parts per million, for exact comparisons.
type Targets struct {
	// LateSharePPM bounds the share of events and revenue in LATE revisions; -1 when not set.
	LateSharePPM int64
	// TooLateSharePPM bounds the share left to reconciliation; -1 when not set (the lateness then
	// stays: it is the business's correction period).
	TooLateSharePPM int64
	// OnTime bounds how long after its end ON_TIME comes (needs a clock); 0 when not set.
	OnTime time.Duration
	// ResidualDups bounds the copies counted twice.
	ResidualDups int64
}

// Defaults are cmd/launch's defaults (without EARLY firings, as reconcile's), the docs'
// candidates, and targets of 1 % late, none twice.
func Defaults() Options {
	return Options{
		Stream: reconcile.Defaults().Stream,
		Try: Candidates{
			Bounds:              []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour},
			LatenessPercentiles: []int{90, 95, 99},
			Lateness:            []time.Duration{time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour},
			Retention:           []time.Duration{time.Hour, 6 * time.Hour, 12 * time.Hour, 25 * time.Hour, 48 * time.Hour},
			Idle:                []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour},
		},
		Targets: Targets{LateSharePPM: 10_000, TooLateSharePPM: -1, ResidualDups: 0},
	}
}

// Validate checks every setting without touching the source, each error naming its flag.
func (o Options) Validate() error {
	minRetention, t := o.Triggers.Lifetime(), o.Targets
	errs := []error{
		cli.ErrIf(o.Source == "", "--source is required (a raw-log folder or a Pub/Sub archive)"),
		o.Event.Validate(), o.Watermark.Validate(), o.Triggers.Validate(),
		cli.ErrIf(o.DedupRetention != 0 && o.DedupRetention < minRetention, "--dedup-retention %v is shorter than window + allowed lateness (%v): cmd/launch refuses it; try shorter horizons with --try-dedup-retention", o.DedupRetention, minRetention),
	}
	if o.ArrivalField != "" {
		if err := (event.Config{MaxFuture: 1, MaxLine: 1, Dimensions: []string{o.ArrivalField}}).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--arrival-field: %w", err))
		}
	}
	if err := (event.Config{MaxFuture: 1, MaxLine: 1, Dimensions: o.Segments}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--segment-by: %w", err))
	}
	for _, c := range []struct {
		flag string
		ds   []time.Duration
		zero bool
	}{
		{"--try-ooo-bound", o.Try.Bounds, true},
		{"--try-allowed-lateness", o.Try.Lateness, true},
		{"--try-dedup-retention", o.Try.Retention, false},
		{"--try-idle-timeout", o.Try.Idle, false},
	} {
		for _, d := range c.ds {
			errs = append(errs, cli.ErrIf(d < 0 || d == 0 && !c.zero || d%time.Millisecond != 0, "%s: %v is not a usable value (want whole milliseconds, %s)", c.flag, d, map[bool]string{true: "0 or more", false: "more than 0"}[c.zero]))
		}
	}
	for _, p := range o.Try.LatenessPercentiles {
		errs = append(errs, cli.ErrIf(p <= 0 || p > 100, "--try-lateness-percentiles: %d is not a percentile (1 to 100)", p))
	}
	return errors.Join(append(errs,
		cli.ErrIf(t.LateSharePPM > 1_000_000 || t.TooLateSharePPM > 1_000_000, "--target-late-share and --target-too-late-share are at most 100%%"),
		cli.ErrIf(t.OnTime < 0, "--target-ontime must not be negative, got %v", t.OnTime),
		cli.ErrIf(t.ResidualDups < 0, "--target-residual-dups must not be negative, got %d", t.ResidualDups),
		report.CheckFlag(o.Report),
		cli.ErrIf(o.JobReport != "" && !strings.HasSuffix(strings.ToLower(o.JobReport), ".json"), "--job-report %q: want a cmd/launch run report ending in .json", o.JobReport),
	)...)
}

// candidates returns try and current, sorted, without repeats.
func candidates(try []time.Duration, current time.Duration) []time.Duration {
	out := append(slices.Clone(try), current)
	slices.Sort(out)
	return slices.Compact(out)
}
