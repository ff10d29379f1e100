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
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Options are the settings of one reconcile run. The validation, watermark and window settings must
// be the stream's: verdicts and keys depend on them.
type Options struct {
	// Settings are the recomputation's: --source, the stream's settings, --shards.
	Settings
	// Sink is the versioned sink to compare with and correct (--sink).
	Sink sink.Spec
	// Range selects the windows checked (--from/--to or --date).
	Range Range
	// Apply writes the material corrections (--apply).
	Apply bool
	// ToleranceMicros is --tolerance: a revenue difference up to it, counts equal, is not material.
	ToleranceMicros int64
	// Report is the report file (--report; .md, .json or .html), or "".
	Report string

	// WorkDir (--work-dir) is where the pipeline leaves its result, reachable by workers and
	// driver; "" means a local temporary folder.
	WorkDir string
	// RunID names the run (writer reconcile:<run_id>); "" generates one.
	RunID string
	// Top is how many differences the summary lists.
	Top int
	// LogLevel is --log-level.
	LogLevel slog.Level

	// Runner, EnvironmentType and SharedFilesystem decide whether local paths are refused.
	Runner, EnvironmentType string
	SharedFilesystem        bool
	// DryRun (--dry-run) is where Run writes the pipeline proto instead of running ("": run).
	DryRun string
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	stream := pipeline.Defaults()
	stream.Triggers.Early = 0 // a recomputation fires no EARLY rows
	return Options{
		Settings: Settings{Event: stream.Event, Watermark: stream.Watermark, Triggers: stream.Triggers, Shards: DefaultShards},
		Sink:     sink.Spec{Scheme: sink.SchemeSQLite, Path: "revenue.db"},
		Top:      10,
	}
}

// Validate checks every setting without touching the filesystem, each error naming its flag.
func (o Options) Validate() error {
	var errs []error
	if o.Source == "" {
		errs = append(errs, errors.New("--source is required (the raw-log folder)"))
	}
	if o.Sink.Scheme != sink.SchemeSQLite && o.Sink.Scheme != sink.SchemeBigQuery {
		errs = append(errs, fmt.Errorf("--sink %s: reconcile reads and corrects sqlite:PATH and bigquery:PROJECT.DATASET sinks only", o.Sink))
	}
	if o.ToleranceMicros < 0 {
		errs = append(errs, fmt.Errorf("--tolerance must not be negative"))
	}
	if o.Report != "" {
		if err := report.CheckPath(o.Report); err != nil {
			errs = append(errs, fmt.Errorf("--report: %w", err))
		}
	}
	if o.Shards < 1 {
		errs = append(errs, fmt.Errorf("--shards must be positive, got %d", o.Shards))
	}
	if o.Top < 0 {
		errs = append(errs, fmt.Errorf("top differences must not be negative, got %d", o.Top))
	}
	if o.RunID != "" && !runIDPattern.MatchString(o.RunID) {
		errs = append(errs, fmt.Errorf("--run-id %q: use letters, digits, '-', '_' and '.' only", o.RunID))
	}
	errs = append(errs, o.Event.Validate(), o.Watermark.Validate(), o.Triggers.Validate())
	if o.DryRun != "" {
		errs = append(errs, cli.CheckDryRunFlags(o.Runner))
	}
	if err := errors.Join(errs...); err != nil {
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
