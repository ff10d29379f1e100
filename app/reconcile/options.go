package reconcile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Options are the settings of one reconcile run. The validation, watermark and window settings must
// be the stream's: verdicts and keys depend on them.
type Options struct {
	// Settings are the recomputation's: --source, the stream's settings, --shards.
	Settings
	// The other flags, as flagTable describes them: Range is --from/--to or --date, ToleranceMicros
	// --tolerance, Top --top; an empty WorkDir is a local temporary folder, an empty RunID is drawn.
	Sink            sink.Spec
	Range           Range
	Apply           bool
	ToleranceMicros int64
	Report, WorkDir string
	RunID, DryRun   string
	Top             int
	LogLevel        slog.Level

	// Runner, EnvironmentType and SharedFilesystem decide whether local paths are refused.
	Runner, EnvironmentType string
	SharedFilesystem        bool
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	stream := pipeline.Defaults()
	stream.Triggers.Early = 0 // a recomputation fires no EARLY rows
	return Options{
		Settings: Settings{Stream: stream.Stream, Shards: DefaultShards},
		Sink:     sink.Default,
		Top:      10,
	}
}

// Validate checks every setting without touching the filesystem, each error naming its flag.
func (o Options) Validate() error {
	if err := errors.Join(
		cli.ErrIf(o.Source == "", "--source is required (the raw-log folder)"),
		cli.ErrIf(o.Sink.Scheme != sink.SchemeSQLite && o.Sink.Scheme != sink.SchemeBigQuery, "--sink %s: reconcile reads and corrects sqlite:PATH and bigquery:PROJECT.DATASET sinks only", o.Sink),
		cli.ErrIf(o.ToleranceMicros < 0, "--tolerance: must not be negative, got %s", model.FormatMicros(o.ToleranceMicros)),
		report.CheckFlag(o.Report),
		cli.ErrIf(o.Shards < 1, "--shards must be positive, got %d", o.Shards),
		cli.ErrIf(o.Top < 0, "top differences must not be negative, got %d", o.Top),
		cli.ErrIf(o.RunID != "" && !runIDPattern.MatchString(o.RunID), "--run-id %q: use letters, digits, '-', '_' and '.' only", o.RunID),
		// The one validation launch runs.
		pipeline.Options{Stream: o.Stream}.Validate(),
		cli.CheckRunner(o.Runner),
		cli.CheckDryRunFlags(o.DryRun, o.Runner),
		localrunner.CheckAsync("reconcile", o.Runner),
	); err != nil {
		return err
	}
	return o.placement()
}

// placement refuses what out-of-process workers could not reach: source, sink and work dir.
func (o Options) placement() error {
	p := cli.Placement{Runner: o.Runner, EnvironmentType: o.EnvironmentType, Shared: o.SharedFilesystem}
	if o.Sink.Scheme == sink.SchemeSQLite {
		p.Local("--sink="+o.Sink.String(), "use --sink=bigquery:PROJECT.DATASET")
	}
	if cli.LocalPath(o.Source) {
		p.Local("--source="+o.Source, "read the raw log from a bucket with --source=gs://BUCKET/PATH")
	}
	switch {
	case o.WorkDir == "":
		p.Local("the result's work dir (a local temporary folder by default)", "pass --work-dir=gs://BUCKET/PATH")
	case cli.LocalPath(o.WorkDir):
		p.Local("--work-dir="+o.WorkDir, "pass --work-dir=gs://BUCKET/PATH")
	}
	return p.Err()
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// RunConfig is what the sink's run_config must hold: rows computed with another window,
// dimensions or lateness would not line up.
func (o Options) RunConfig() map[string]string { return pipeline.RunConfig(o.Event, o.Triggers) }

// NewRunID returns the UTC start time, sortable, with a random suffix.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Range selects windows whose window_start is in [From, To); zero: every window in the raw log.
type Range struct {
	From, To       int64 // epoch ms
	HasFrom, HasTo bool
}

// All reports whether the range is the default: every window present.
func (r Range) All() bool { return !r.HasFrom && !r.HasTo }

// Contains reports whether start is in the range (always, for the zero Range).
func (r Range) Contains(start int64) bool {
	return (!r.HasFrom || start >= r.From) && (!r.HasTo || start < r.To)
}

func (r Range) String() string {
	if r.All() {
		return "every window present in the raw log"
	}
	from, to := "start", "end"
	if r.HasFrom {
		from = model.FormatTime(r.From)
	}
	if r.HasTo {
		to = model.FormatTime(r.To)
	}
	return "[" + from + ", " + to + ")"
}

// RangeFlags are --from, --to and --date, shared by cmd/reconcile and cmd/advise; Range reads them.
type RangeFlags struct{ from, to, date string }

// Flags are the flags' table rows; verb is what the command does to the windows ("check").
func (r *RangeFlags) Flags(verb string) []cli.Flag {
	return []cli.Flag{
		{Name: "from", Value: cli.String(&r.from), Arg: "HOUR", Usage: "first window start to " + verb + ", an RFC 3339 whole hour (inclusive)", Default: "every hour in the raw log"},
		{Name: "to", Value: cli.String(&r.to), Arg: "HOUR", Usage: "window start to stop before, an RFC 3339 whole hour (exclusive)"},
		{Name: "date", Value: cli.String(&r.date), Arg: "YYYY-MM-DD", Usage: verb + " the windows of one UTC day (instead of --from/--to)"},
	}
}

// Range is the range the flags select (see ParseRange).
func (r RangeFlags) Range() (Range, error) { return ParseRange(r.from, r.to, r.date) }

// ParseRange reads --from and --to (RFC 3339 whole UTC hours, either open) or --date=YYYY-MM-DD.
func ParseRange(from, to, date string) (Range, error) {
	if date != "" {
		if from != "" || to != "" {
			return Range{}, fmt.Errorf("--date cannot be combined with --from or --to")
		}
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return Range{}, fmt.Errorf("--date %q: want YYYY-MM-DD (a UTC day)", date)
		}
		return Range{From: d.UnixMilli(), To: d.AddDate(0, 0, 1).UnixMilli(), HasFrom: true, HasTo: true}, nil
	}
	var r Range
	for _, h := range []struct {
		flag, v string
		at      *int64
		has     *bool
	}{{"--from", from, &r.From, &r.HasFrom}, {"--to", to, &r.To, &r.HasTo}} {
		if h.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, h.v)
		if err != nil {
			return Range{}, fmt.Errorf("%s %q: want an RFC 3339 hour such as 2026-11-04T10:00:00Z", h.flag, h.v)
		}
		if t.UTC().Truncate(time.Hour) != t.UTC() {
			return Range{}, fmt.Errorf("%s %q: not a whole UTC hour (%s)", h.flag, h.v, t.UTC().Format(time.RFC3339Nano))
		}
		*h.at, *h.has = t.UnixMilli(), true
	}
	if r.HasFrom && r.HasTo && r.From >= r.To {
		return Range{}, fmt.Errorf("--from %s must be before --to %s (the range is [from, to))", from, to)
	}
	return r, nil
}
