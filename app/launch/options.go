package launch

import (
	"cmp"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/watermark"

	// Every runner the SDK ships, its flags and the local and GCS filesystems.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// The demos --demo selects: a replay of a generated history (the default when there is no
// --source) or a live feed written while the job follows it (app/live.Demo).
const (
	DemoReplay = "replay"
	DemoLive   = "live"
)

// Defaults of the settings that are not pipeline settings.
const (
	DefaultDemoDir = "demo-data"
	DefaultRunner  = "prism"
	// A graceful stop cancels the job once the sink is quiet that long, or at the timeout.
	DefaultQuietPeriod = 2 * time.Second
	DefaultStopTimeout = 10 * time.Second
	// DefaultSealEvery is how often a following folder run reads the resume points it could seal;
	// BigQuery bills at least 10 MB a query, hence the longer periods there (also for the live views).
	DefaultSealEvery  = 10 * time.Second
	bigQuerySealEvery = 5 * time.Minute
	bigQueryLiveEvery = time.Minute
)

// Options is everything cmd/launch accepts, parsed and typed (Parse; tests start from Defaults). A
// flag's field is described in the flag table (main.go); zero durations and counts take the
// defaults of the sources and pubsub packages.
type Options struct {
	// Source is a raw-log folder or "pubsub:projects/P/subscriptions/S"; empty: the demo (DemoDir).
	Source  string
	DemoDir string
	// FolderOptions are the folder reader's settings: --follow, --settle, --discover-every and
	// --read-ahead (ReadAheadRecords; 0: flow.DefaultReadAhead); PollInterval, MaxPerCall and
	// ReadAheadLead have no flag. PubSub is the Pub/Sub reader's (--pubsub-*); folderOptions and
	// pubsubOptions add the run's settings.
	sources.FolderOptions
	PubSub pubsub.Options

	Sink    sink.Spec
	BQFlush time.Duration
	// Pipeline holds the settings of SPEC §2 and §3; a replay runs with Triggers.Early 0.
	Pipeline pipeline.Options
	Report   string
	LogLevel slog.Level
	// Runner is Beam's --runner; Rehearse, on prism, the runner whose capability profile counts.
	Runner, Rehearse string

	PrismUIPort int
	// Demo is "", DemoReplay or DemoLive (a feed written into live.DemoDir).
	Demo             string
	Duration         time.Duration
	UI, MetricsAddr  string
	SharedFilesystem bool
	// DryRun is where Run writes the pipeline proto instead of running ("": run); Control the
	// folder of the run's stop request (see ControlDir).
	DryRun, Control string
	// Workers is --workers, the worker count the dedup cache is sized for off prism (0: workers()).
	Workers int

	// Not flags. QuietPeriod and StopTimeout shape a graceful stop; SealEvery: DefaultSealEvery.
	QuietPeriod, StopTimeout, SealEvery time.Duration
	// RunToken names the run's stop request and checkpoints (empty: drawn at start).
	RunToken string
	// ProgressEvery is the period of progress reports (0: none).
	ProgressEvery time.Duration
}

// workers is --workers, else Dataflow's --num_workers or Flink's --parallelism, else 0 (one
// worker owning every shard).
func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	if f := flag.Lookup("num_workers"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return n
		}
	}
	return max(*jobopts.Parallelism, 0)
}

// IsPubSub reports whether the source is a Pub/Sub subscription.
func (o Options) IsPubSub() bool { return strings.HasPrefix(o.Source, "pubsub:") }

// Streaming reports whether the source is unbounded: a followed folder or Pub/Sub.
func (o Options) Streaming() bool { return o.Follow || o.IsPubSub() }

// ArchiveDir is a Pub/Sub source's archive folder: --pubsub-archive or the default ("": no Pub/Sub).
func (o Options) ArchiveDir() string {
	if !o.IsPubSub() {
		return ""
	}
	if o.PubSub.ArchiveDir != "" {
		return o.PubSub.ArchiveDir
	}
	_, id, err := pubsub.ParseSource(o.Source)
	if err != nil {
		return ""
	}
	return filepath.Join(pubsub.DefaultArchiveRoot, id)
}

// profileRunner is the runner whose capability profile the pipeline is built for.
func (o Options) profileRunner() string { return cmp.Or(o.Rehearse, o.Runner) }

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	return Options{
		DemoDir:       DefaultDemoDir,
		Sink:          sink.Default,
		BQFlush:       sink.DefaultFlushPolicy.Interval,
		Pipeline:      pipeline.Defaults(),
		LogLevel:      slog.LevelInfo,
		Runner:        DefaultRunner,
		QuietPeriod:   DefaultQuietPeriod,
		ProgressEvery: DefaultProgressEvery,
		StopTimeout:   DefaultStopTimeout,
		SealEvery:     DefaultSealEvery,
	}
}

// cadence is how the launcher looks at the sink: how often a follower reads the resume points it
// could seal, how often the live views read the rows (0: every refresh), and how long the write
// counters must stand still for the output to count as settled. BigQuery is read less often, and
// it counts a row when buffered, so the longest a buffered row waits for its append (two flush
// intervals, sink.FlushPolicy.MaxDelay) is added to the quiet.
type cadence struct{ seal, live, quiet time.Duration }

func (o Options) cadence() cadence {
	if o.Sink.Scheme != sink.SchemeBigQuery {
		return cadence{o.SealEvery, 0, o.QuietPeriod}
	}
	return cadence{max(o.SealEvery, bigQuerySealEvery), bigQueryLiveEvery, o.QuietPeriod + o.flushPolicy().MaxDelay()}
}

// validate checks the settings together, before any work, creating nothing: every failure names
// its flag (Run makes it a *ConfigError).
func (o Options) validate() error {
	if o.IsPubSub() {
		if _, _, err := pubsub.ParseSource(o.Source); err != nil {
			return err
		}
	} else if p := o.PubSub; p.ArchiveDir != "" || p.Pullers != 0 || p.Shards != 0 || p.ArchiveFailAfter != 0 || p.StallAfter != 0 {
		return fmt.Errorf("--pubsub-archive, --pubsub-pullers, --pubsub-shards, --pubsub-archive-fail-after and --pubsub-stall-after apply to a Pub/Sub source (--source=pubsub:projects/P/subscriptions/S) only")
	}
	if err := o.validateDemo(); err != nil {
		return err
	}
	prism, sinkErr, flushErr := capability.IsPrism(o.Runner), o.Sink.CheckPath(), o.flushPolicy().Validate()
	var controlErr error
	if o.Control != "" {
		controlErr = files.CheckName(o.Control) // no client: check prepares the folder
	}
	if err := cmp.Or(
		cli.CheckRunner(o.Runner),
		cli.ErrIf(o.Duration > 0 && stopRefusal(o.Runner) != "", "--duration stops the run gracefully, which the launcher cannot do on --runner=%s: %s", o.Runner, stopRefusal(o.Runner)),
		cli.ErrIf(o.Source == "" && o.Follow && o.Demo != DemoLive, "--follow needs --source: the demo log is complete, there is nothing to follow"),
		o.Pipeline.Validate(),
		cli.ErrIf(sinkErr != nil, "--sink=%s: %v", o.Sink, sinkErr),
		report.CheckFlag(o.Report),
		cli.ErrIf(o.ReadAheadRecords != 0 && !o.inProcess(), "--read-ahead bounds the embedded runner's in-process workers (prism, LOOPBACK); --runner=%s --environment_type=%s has its own flow control", o.Runner, *jobopts.EnvironmentType),
		cli.ErrIf(o.Pipeline.Watermark.IdleAdvance == watermark.AdvanceHold && !prism, "--idle-advance=hold needs --runner=prism: an idle partition follows the active ones it sees in its own worker process, and on %s a worker holding only idle partitions would hold the whole pipeline; use --idle-advance=processing-time", o.Runner),
		cli.ErrIf(o.Rehearse != "" && !prism, "--rehearse=%s runs on prism what %s would be sent: it needs --runner=prism, got %q", o.Rehearse, o.Rehearse, o.Runner),
		cli.ErrIf(o.Rehearse != "" && !capability.Named(o.Rehearse), "--rehearse=%s: not a runner the capability table knows (flink, universal, dataflow, spark, prism)", o.Rehearse),
		cli.ErrIf(o.Workers != 0 && prism, "--workers sizes the dedup cache of a distributed runner's workers: prism runs every shard in this process (its cache is --dedup-cache, default 1GiB)"),
		cli.ErrIf(o.PrismUIPort != 0 && !prism, "--prism-ui-port: the web UI is prism's: it needs --runner=prism, got %q", o.Runner),
		localrunner.CheckAsync("launch", o.Runner),
		cli.ErrIf(flushErr != nil, "--bq-flush: %v", flushErr),
		cli.ErrIf(o.QuietPeriod < 0 || o.StopTimeout < 0, "stop timing must not be negative"),
		o.folderOptions(o.Pipeline.WithDefaults()).Check(), // for the demo too, before its log is generated
		cli.ErrIf(controlErr != nil, "--control=%s: %v", o.Control, controlErr),
		o.placement(),
		cli.CheckDryRunFlags(o.DryRun, o.Runner),
	); err != nil {
		return err
	}
	switch a := o.ArchiveDir(); {
	case o.IsPubSub():
		if err := pubsub.Validate(o.Source, o.pubsubOptions(o.Pipeline)); err != nil || !files.IsLocal(a) {
			return err
		} else if !prism {
			return fmt.Errorf("--pubsub-archive=%s: a local archive needs --runner=prism; on %s use gs://BUCKET/PATH", a, o.Runner)
		} else if fi, err := os.Stat(a); err == nil && !fi.IsDir() {
			return fmt.Errorf("--pubsub-archive=%s: exists and is not a folder", a)
		}
	case o.Source != "" && (o.DryRun == "" || files.IsLocal(o.Source)):
		return sources.Validate(o.Source, o.folderOptions(o.Pipeline))
	}
	return nil
}

// validateDemo checks --demo, --duration, --ui and --metrics-addr against the rest.
func (o Options) validateDemo() error {
	switch o.Demo {
	case "", DemoReplay:
	case DemoLive:
		if o.Source != "" {
			return fmt.Errorf("--demo=live writes its own source folder (./%s): it takes no --source", live.DemoDir)
		}
		if _, err := live.NewDemo(live.DemoDir, o.Pipeline.WithDefaults()); err != nil {
			return fmt.Errorf("--demo=live: %v", err)
		}
	default:
		return fmt.Errorf("--demo: %q: want %s or %s", o.Demo, DemoReplay, DemoLive)
	}
	if err := cmp.Or(
		cli.ErrIf(o.Demo == DemoReplay && o.Source != "", "--demo=replay replays the generated demo log: it takes no --source"),
		cli.ErrIf(o.Duration < 0, "--duration must not be negative, got %v", o.Duration),
		cli.ErrIf(o.Duration > 0 && !o.Streaming() && o.Demo != DemoLive, "--duration stops a streaming run (--follow, Pub/Sub or --demo=live); a replay ends by itself"),
	); err != nil {
		return err
	}
	for _, a := range []struct{ flag, value string }{{"--ui", o.UI}, {"--metrics-addr", o.MetricsAddr}} {
		if _, err := live.Addr(a.flag, a.value); a.value != "" && err != nil {
			return err
		}
	}
	return nil
}

const controlName = "_control"

// ControlDir is where a graceful stop writes the run's stop request: --control, or _control in the
// folder every worker reads (the Pub/Sub archive, or source); '_' names are skipped (rawlog.Ignored).
func (o Options) ControlDir(source string) string {
	if o.Control != "" {
		return o.Control
	}
	dir := source
	if o.IsPubSub() {
		dir = o.ArchiveDir()
	}
	if dir == "" {
		return ""
	}
	return files.Join(dir, controlName)
}

// pubsubOptions are the Pub/Sub reader settings with pipeline options po.
func (o Options) pubsubOptions(po pipeline.Options) pubsub.Options {
	p := o.PubSub
	p.Watermark, p.Event = po.Watermark, po.Event
	return p
}

// folderOptions are the reader settings of a run with pipeline options po.
func (o Options) folderOptions(po pipeline.Options) sources.FolderOptions {
	f := o.FolderOptions
	f.Watermark, f.Event = po.Watermark, po.Event
	f.MaxPerCall = cmp.Or(f.MaxPerCall, sources.CallSizeFor(po.DedupShards))
	f.ReadAheadRecords = o.readAhead() // the account is named in check
	f.ReadAheadLead = cmp.Or(f.ReadAheadLead, flow.Lead(po.Triggers.Window, po.Watermark.OutOfOrderBound))
	return f
}

// inProcess reports whether the job's workers run in this process (prism in LOOPBACK).
func (o Options) inProcess() bool { return cli.WorkersInProcess(o.Runner, *jobopts.EnvironmentType) }

// readAhead is the sources' read-ahead bound in records: 0 unless the workers run in this process.
func (o Options) readAhead() int {
	if !o.inProcess() {
		return 0
	}
	return cmp.Or(o.ReadAheadRecords, flow.DefaultReadAhead)
}

// flushPolicy is the BigQuery sink's batching with --bq-flush.
func (o Options) flushPolicy() sink.FlushPolicy {
	p := sink.DefaultFlushPolicy
	p.Interval = o.BQFlush
	p.Clock = o.Streaming()
	return p
}

// placement refuses local paths that workers in other processes would each see their own copy of.
func (o Options) placement() error {
	p := cli.Placement{Runner: o.Runner, EnvironmentType: *jobopts.EnvironmentType, Shared: o.SharedFilesystem}
	switch o.Sink.Scheme {
	case sink.SchemeSQLite, sink.SchemeJSONL: // local paths only (ParseSpec)
		p.Local("--sink="+o.Sink.String(), "use --sink=bigquery:PROJECT.DATASET")
	case sink.SchemeConsole: // a worker's stdout, and a revision guard in its memory
		p.Here("--sink=console prints on the stdout of the process running the write step",
			"use --sink=bigquery:PROJECT.DATASET (or --sink=sqlite:PATH with --shared-filesystem)")
	}
	switch {
	case o.Source == "":
		p.Local("the demo's log (./"+o.DemoDir+")", "replay it from a bucket with --source=gs://BUCKET/PATH")
	case o.IsPubSub():
		if cli.LocalPath(o.ArchiveDir()) {
			p.Local("--pubsub-archive="+o.ArchiveDir(), "archive to a bucket with --pubsub-archive=gs://BUCKET/PATH")
		}
	case cli.LocalPath(o.Source):
		p.Local("--source="+o.Source, "read the raw log from a bucket with --source=gs://BUCKET/PATH")
	}
	if o.Control != "" && cli.LocalPath(o.Control) {
		p.Local("--control="+o.Control, "write the stop request to a bucket with --control=gs://BUCKET/PATH")
	}
	return p.Err()
}

// embeddedStateBytes is what the embedded runner holds at rate events/s once the retention is
// full: rate × (retention + window) ids in prism's heap, plus the dedup cache (at most cacheBytes).
func embeddedStateBytes(rate int, retention, window time.Duration, cacheBytes int64) int64 {
	ids := int64(float64(rate) * (retention + window).Seconds())
	return ids*transforms.DedupStateBytesPerID + min(int64(float64(ids)*transforms.DedupCacheBytesPerID), cacheBytes)
}

// memoryWarning is the line logged when --design-rate on prism would hold more state than the
// machine's memory ("": it fits, off prism, or no rate set).
func (o Options) memoryWarning(machine int64) string {
	if o.Pipeline.DesignRate <= 0 || machine <= 0 || !capability.IsPrism(o.Runner) {
		return ""
	}
	po := o.Pipeline.WithDefaults()
	cache := int64(cmp.Or(po.DedupCacheBytes, transforms.DefaultDedupCacheBytes))
	need := embeddedStateBytes(po.DesignRate, po.DedupRetention, po.Triggers.Window, cache)
	if need <= machine {
		return ""
	}
	return fmt.Sprintf("--design-rate=%d on the embedded runner holds about %s of dedup state once the %s retention is full (24 B per id in prism's heap, and the --dedup-cache), more than this machine's %s: lower the rate or --dedup-retention, or run on Flink or Dataflow (docs/capacity.md)",
		po.DesignRate, gib(need), po.DedupRetention, gib(machine))
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
