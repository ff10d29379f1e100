package reconcile

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/io/sinks"
)

// Flags binds the command-line flags of cmd/reconcile (SPEC §6) to a flag
// set. Parse the set, then call Options: it validates every value, so a bad
// flag is one error before any work starts.
type Flags struct {
	source, sink, from, to, date, tolerance, report, dimensions string
	workDir, runID, logLevel                                    string
	apply, sharedFS                                             bool
	window, lateness, oooBound, idle, maxFuture, maxAge         time.Duration
	early, retention                                            time.Duration
	maxLine, shards, top                                        int
}

// BindFlags defines the flags on fs. The stream's shared flags are all
// accepted, so one flag file serves both commands; --early, --idle-timeout
// and --dedup-retention shape the stream only and are ignored here.
func BindFlags(fs *flag.FlagSet) *Flags {
	d := Defaults()
	f := &Flags{}
	fs.StringVar(&f.source, "source", "", "raw-log folder to recompute from (required)")
	fs.StringVar(&f.sink, "sink", d.Sink.String(), "sink to compare with and correct: sqlite:PATH or bigquery:PROJECT.DATASET")
	fs.StringVar(&f.from, "from", "", "first window start to check, an RFC 3339 whole hour (inclusive)")
	fs.StringVar(&f.to, "to", "", "window start to stop before, an RFC 3339 whole hour (exclusive)")
	fs.StringVar(&f.date, "date", "", "check the windows of one UTC day, YYYY-MM-DD (instead of --from/--to)")
	fs.BoolVar(&f.apply, "apply", false, "write material corrections as higher FINAL revisions")
	fs.StringVar(&f.tolerance, "tolerance", "0", "revenue difference (an amount) up to which equal-count windows are not material")
	fs.StringVar(&f.report, "report", "", "report file: .md, .json or .html (self-contained)")
	fs.DurationVar(&f.window, "window", d.Triggers.Window, "window size (must match the sink's run_config)")
	fs.DurationVar(&f.lateness, "allowed-lateness", d.Triggers.AllowedLateness, "allowed lateness (must match the sink's run_config)")
	fs.StringVar(&f.dimensions, "dimensions", "", "comma-separated dimension fields (must match the sink's run_config)")
	fs.DurationVar(&f.oooBound, "ooo-bound", d.Watermark.OutOfOrderBound, "out-of-order bound of the partition watermark (for --max-age verdicts)")
	fs.DurationVar(&f.idle, "idle-timeout", d.Watermark.IdleTimeout, "accepted for flag compatibility with cmd/launch; unused")
	fs.DurationVar(&f.early, "early", time.Minute, "accepted for flag compatibility with cmd/launch; unused")
	fs.DurationVar(&f.retention, "dedup-retention", 0, "accepted for flag compatibility with cmd/launch; unused")
	fs.DurationVar(&f.maxFuture, "max-future", d.Event.MaxFuture, "quarantine events more than this ahead of the read time")
	fs.DurationVar(&f.maxAge, "max-age", 0, "quarantine events older than this behind the partition watermark (0: off)")
	f.maxLine = d.Event.MaxLine
	fs.Var((*sizeFlag)(&f.maxLine), "max-line", "longest accepted line: bytes or a size like 512KiB, 1MiB")
	fs.IntVar(&f.shards, "shards", d.Shards, "event-id shards of the choice step")
	fs.StringVar(&f.workDir, "work-dir", "", "where the pipeline leaves its result for the driver (any Beam filesystem, e.g. gs://bucket/tmp on Dataflow); default a local temporary folder")
	fs.StringVar(&f.runID, "run-id", "", "run id (default: UTC start time and a random suffix)")
	fs.IntVar(&f.top, "top", d.Top, "differences listed in the summary")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&f.sharedFS, "shared-filesystem", false, "every worker sees this machine's local paths (a job server on this machine, an NFS mount): allow a local source, sink and work dir off the in-process runner")
	return f
}

// Options returns the validated options. Every error names its flag.
func (f *Flags) Options() (Options, error) {
	o := Defaults()
	var errs []error
	var err error
	o.Source, o.Report, o.Apply = f.source, f.report, f.apply
	o.WorkDir, o.RunID, o.Shards, o.Top = f.workDir, f.runID, f.shards, f.top
	// The Beam runner flags are the SDK's process-wide ones.
	o.Runner, o.EnvironmentType, o.SharedFilesystem = *runners.Runner, *jobopts.EnvironmentType, f.sharedFS
	if o.Sink, err = sinks.ParseSpec(f.sink); err != nil {
		errs = append(errs, fmt.Errorf("--sink: %w", err))
	}
	if o.Range, err = ParseRange(f.from, f.to, f.date); err != nil {
		errs = append(errs, err)
	}
	if o.ToleranceMicros, err = event.ParseAmount([]byte(f.tolerance)); err != nil {
		errs = append(errs, fmt.Errorf("--tolerance: %w", err))
	} else if o.ToleranceMicros < 0 {
		errs = append(errs, fmt.Errorf("--tolerance must not be negative, got %s", f.tolerance))
	}
	o.Triggers.Window, o.Triggers.AllowedLateness = f.window, f.lateness
	o.Watermark.OutOfOrderBound, o.Watermark.IdleTimeout = f.oooBound, f.idle
	o.Event.MaxFuture, o.Event.MaxAge, o.Event.MaxLine = f.maxFuture, f.maxAge, f.maxLine
	if f.dimensions != "" {
		o.Event.Dimensions = strings.Split(f.dimensions, ",")
	}
	if _, err := f.LogLevel(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Options{}, err
	}
	return o, o.Validate()
}

// LogLevel parses --log-level.
func (f *Flags) LogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.logLevel)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	return l, nil
}

// sizeFlag reads --max-line as cmd/launch does (cli.ParseSize), so one flag
// file serves both commands.
type sizeFlag int

func (v *sizeFlag) String() string { return cli.FormatSize(int(*v)) }

func (v *sizeFlag) Set(s string) error {
	n, err := cli.ParseSize(s)
	if err != nil {
		return err
	}
	*v = sizeFlag(n)
	return nil
}
