package launch

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/io/sources"
	"github.com/revenue-stream/hourly/io/sources/pubsub"
	"github.com/revenue-stream/hourly/pipeline"

	// Every runner the SDK ships registers itself and its flags (--runner,
	// --endpoint, --environment_type, Dataflow's --project, --region,
	// --temp_location, ...), with the local and GCS filesystems.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// Defaults of the settings that are not pipeline settings.
const (
	DefaultSink    = "sqlite:revenue.db"
	DefaultDemoDir = "demo-data"
	DefaultRunner  = "prism"
	// DefaultQuietPeriod and DefaultStopTimeout shape a graceful stop: after
	// the readers stop, the job is cancelled once the sink has seen no write
	// for the quiet period, or at the timeout whatever happens.
	DefaultQuietPeriod = 2 * time.Second
	DefaultStopTimeout = 10 * time.Second
	// DefaultSealEvery is how often a following folder run reads the
	// resume points it could seal (see sealer): four small queries of the
	// sink. BigQuery bills at least 10 MB a query, so there it is at least
	// bigQuerySealEvery (about 4 GB billed a day).
	DefaultSealEvery  = 10 * time.Second
	bigQuerySealEvery = 5 * time.Minute
	// bigQueryLiveEvery is how often the live views read a BigQuery sink:
	// two queries, at least 20 MB billed, a minute (about 29 GB a day).
	bigQueryLiveEvery = time.Minute
)

// Options is everything cmd/launch accepts, parsed and typed. Parse builds it
// from flags; tests build it from Defaults.
type Options struct {
	// Source is the raw-log folder to read, or a Pub/Sub subscription
	// "pubsub:projects/P/subscriptions/S". Empty means the demo: a log
	// generated once into DemoDir, then replayed.
	Source  string
	DemoDir string
	// Follow keeps watching the folder for new files (streaming); without
	// it the folder is replayed and the job ends. A Pub/Sub source is
	// always streaming (Follow is then implied).
	Follow bool
	// PubSubArchive is the raw-log folder a Pub/Sub source archives every
	// payload to before acknowledging it (--pubsub-archive). Empty takes
	// the pubsub package's default, ./pubsub-log/<subscription id>.
	PubSubArchive string
	// PubSubPullers, PubSubShards and PubSubArchiveFailAfter are the Pub/Sub
	// reader's pull streams per reader key, reader keys, and how long its
	// archive may fail before the job does (--pubsub-pullers,
	// --pubsub-shards, --pubsub-archive-fail-after; zero: the package
	// defaults).
	PubSubPullers, PubSubShards int
	PubSubArchiveFailAfter      time.Duration
	Sink                        sinks.Spec
	// BQFlush is how often the BigQuery sink appends what it buffered
	// (--bq-flush; see sinks.FlushPolicy). Other sinks ignore it.
	BQFlush time.Duration
	// Pipeline holds the settings of SPEC §2 and §3. Its Triggers.Early is
	// the requested value: a replay without Follow runs with 0.
	Pipeline pipeline.Options
	// Report is the run report's path; its extension picks the format
	// (see report.Extensions). Empty writes none.
	Report   string
	LogLevel slog.Level
	// Runner is Beam's --runner (prism unless set).
	Runner string
	// Settle is how long a followed file ending in a line without a newline
	// must stay unchanged before that line is read (--settle; 0 takes
	// sources.DefaultSettle).
	Settle time.Duration
	// DiscoverEvery is how often a follower looks for new partition folders
	// (--discover-every; 0 takes sources.DefaultDiscoverEvery).
	DiscoverEvery time.Duration
	// PrismUIPort, when positive, serves prism's web UI (jobs, their state
	// and metrics) on localhost:PrismUIPort while this process runs
	// (--prism-ui-port; prism runner only).
	PrismUIPort int
	// Demo is --demo: "" or DemoReplay (the generated history, when there
	// is no --source) or DemoLive (a feed written into LiveDir while the
	// job follows it). Duration, when positive, stops a streaming run
	// gracefully after that long (--duration). UI is --ui, the live page's
	// [HOST:]PORT (loopback unless a host is given).
	Demo     string
	LiveDir  string
	Duration time.Duration
	UI       string
	// SharedFilesystem (--shared-filesystem) says every worker sees this
	// machine's local paths: without it, a runner whose workers run
	// elsewhere is refused a local source, archive or sink (see placement).
	SharedFilesystem bool
	// Control (--control) is the folder where a graceful stop writes the
	// run's stop request for its readers, wherever they run (see
	// ControlDir and sources.StopSignal).
	Control string

	// Not flags: how a graceful stop waits (see DefaultQuietPeriod), and how
	// the source is read (zero values take the sources or pubsub package
	// defaults; tests read one record per call to make the watermark step).
	// PullTimeout bounds one Pub/Sub pull.
	QuietPeriod, StopTimeout time.Duration
	// SealEvery: see DefaultSealEvery.
	SealEvery time.Duration
	// RunToken names the run: its stop request and the checkpoints its
	// workers write (empty: drawn at start; tests set it to read them).
	RunToken string
	// ProgressEvery is the period of progress reports while a job runs (0:
	// none).
	ProgressEvery             time.Duration
	PollInterval, PullTimeout time.Duration
	MaxPerCall                int
	// ReadAhead (--read-ahead) bounds the records read but not yet taken in
	// by the dedup step when the workers run in this process (prism has no
	// backpressure; see localrunner.ReadAhead); 0 takes
	// localrunner.DefaultReadAhead. Other runners have their own flow
	// control, and setting it for them is refused.
	ReadAhead int
}

// IsPubSub reports whether the source is a Pub/Sub subscription.
func (o Options) IsPubSub() bool { return isPubSub(o.Source) }

func isPubSub(source string) bool { return strings.HasPrefix(source, "pubsub:") }

// Streaming reports whether the source is unbounded: a followed folder or a
// Pub/Sub subscription. A streaming run keeps its EARLY firings and ends
// only when stopped.
func (o Options) Streaming() bool { return o.Follow || o.IsPubSub() }

// ArchiveDir is the Pub/Sub source's archive folder, --pubsub-archive or the
// pubsub package's default for the subscription ("" for other sources or an
// unparsable subscription).
func (o Options) ArchiveDir() string {
	if !o.IsPubSub() {
		return ""
	}
	if o.PubSubArchive != "" {
		return o.PubSubArchive
	}
	_, id, err := pubsub.ParseSource(o.Source)
	if err != nil {
		return ""
	}
	return filepath.Join(pubsub.DefaultArchiveRoot, id)
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	spec, err := sinks.ParseSpec(DefaultSink)
	if err != nil {
		panic(err) // a constant
	}
	return Options{
		DemoDir:       DefaultDemoDir,
		LiveDir:       DefaultLiveDir,
		Sink:          spec,
		BQFlush:       sinks.DefaultFlushPolicy.Interval,
		Pipeline:      pipeline.Defaults(),
		LogLevel:      slog.LevelInfo,
		Runner:        DefaultRunner,
		QuietPeriod:   DefaultQuietPeriod,
		ProgressEvery: DefaultProgressEvery,
		StopTimeout:   DefaultStopTimeout,
		SealEvery:     DefaultSealEvery,
	}
}

// sealEvery is how often a following folder run reads its seal candidates
// (see DefaultSealEvery).
func (o Options) sealEvery() time.Duration {
	if o.Sink.Scheme == sinks.SchemeBigQuery {
		return max(o.SealEvery, bigQuerySealEvery)
	}
	return o.SealEvery
}

// liveSinkEvery is how often the live views read the sink's rows: every
// refresh, except on BigQuery, which bills every query (at least 10 MB).
// The job's figures come from the runner and refresh every second anyway.
func (o Options) liveSinkEvery() time.Duration {
	if o.Sink.Scheme == sinks.SchemeBigQuery {
		return bigQueryLiveEvery
	}
	return 0
}

// quietPeriod is how long the sink's write counters must stand still before
// the output counts as settled: QuietPeriod, plus, for BigQuery, the flush
// interval (a row counts when the append step buffers it, and is appended
// by the flush timer up to an interval later).
func (o Options) quietPeriod() time.Duration {
	if o.Sink.Scheme == sinks.SchemeBigQuery {
		return o.QuietPeriod + o.flushPolicy().Interval
	}
	return o.QuietPeriod
}

func usagef(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// sinkValue is a --sink flag, parsed when set so that an unknown scheme is
// refused with the flags.
type sinkValue struct{ spec *sinks.Spec }

func (v sinkValue) String() string {
	if v.spec == nil || v.spec.Scheme == "" {
		return ""
	}
	return v.spec.String()
}

func (v sinkValue) Set(s string) error {
	spec, err := sinks.ParseSpec(s)
	if err != nil {
		return err
	}
	*v.spec = spec
	return nil
}

// newFlagSet declares the flags of SPEC §6 over o, plus every flag the Beam
// SDK registered on the process's flag set (runner flags). Beam reads its
// flags from their global variables, so they are declared here with the very
// same Values: setting them through this set sets what Beam reads.
func newFlagSet(o *Options, ferr *error) *flag.FlagSet {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by Main, in one line
	add := func(name string, v flag.Value, usage string) { fs.Var(capture(name, v, ferr), name, usage) }
	p := &o.Pipeline

	add("source", stringValue{&o.Source}, "raw-log folder to read, or pubsub:projects/P/subscriptions/S (default: the demo, generated once into ./"+DefaultDemoDir+")")
	add("follow", boolValue{&o.Follow}, "keep watching the folder for new files (streaming) instead of replaying it once")
	add("pubsub-archive", stringValue{&o.PubSubArchive}, "folder (local, gs://BUCKET/PATH or s3://BUCKET/PATH) a Pub/Sub source archives every message to before acknowledging it; the source of truth the records are emitted from (default ./"+pubsub.DefaultArchiveRoot+"/<subscription id>)")
	add("pubsub-pullers", countValue{&o.PubSubPullers}, fmt.Sprintf("Pub/Sub pull streams per reader key, each pulling, archiving and acknowledging (default %d)", pubsub.DefaultPullers))
	add("pubsub-shards", countValue{&o.PubSubShards}, "Pub/Sub reader keys over the one subscription, each its own archive partition and watermark: spreads the reading over workers (default 1)")
	add("pubsub-archive-fail-after", durationValue{&o.PubSubArchiveFailAfter}, fmt.Sprintf("fail the job when the Pub/Sub archive cannot be written for this long (default %s)", pubsub.DefaultArchiveFailAfter))
	add("sink", sinkValue{&o.Sink}, "where rows go: sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET")
	add("bq-flush", durationValue{&o.BQFlush}, "bigquery sink: append buffered rows this often (Storage Write API; at most 2 appends per table per interval, more only past 8 MB)")
	add("window", durationValue{&p.Triggers.Window}, "window size; must divide 24h")
	add("early", durationValue{&p.Triggers.Early}, "EARLY refresh period in processing time; 0s turns it off (a replay has none)")
	add("ooo-bound", durationValue{&p.Watermark.OutOfOrderBound}, "out-of-order bound: partition watermark = max event time - bound")
	add("idle-timeout", durationValue{&p.Watermark.IdleTimeout}, "processing time after which a silent partition leaves the watermark minimum")
	add("idle-advance", idleAdvanceValue{&p.Watermark.IdleAdvance}, "when every partition is idle the watermark follows processing-time (minus --ooo-bound; live traffic) or holds (hold; a backfill)")
	add("discover-every", durationValue{&o.DiscoverEvery}, "--follow: look for new partition folders this often and read them from their first file (default "+sources.DefaultDiscoverEvery.String()+")")
	add("settle", durationValue{&o.Settle}, "--follow: read a file's last line without a newline once the file has not changed for this long (default "+sources.DefaultSettle.String()+")")
	add("allowed-lateness", durationValue{&p.Triggers.AllowedLateness}, "how long after window_end a window takes corrections (then FINAL)")
	add("dedup-retention", durationValue{&p.DedupRetention}, "how long an event_id is remembered (default window + allowed lateness; shorter is refused)")
	add("dedup-shards", countValue{&p.DedupShards}, "dedup state keys (default: 8 on prism, else sized from --design-rate so no key exceeds 64 MB; see docs/capacity.md)")
	add("design-rate", countValue{&p.DesignRate}, "peak events/s the dedup shards are sized for off prism (default 20000)")
	add("dedup-order", stringValue{&p.DedupOrder}, "position: hold each batch until the watermark and judge in source-position order, so the earlier of two copies from one partition counts however the runner delivers them; arrival: as delivered (default: arrival on prism, which delivers in order; position elsewhere)")
	add("early-source", stringValue{&p.EarlySource}, "what drives EARLY rows: timer (processing-time timers) or impulse (a periodic impulse; the portable Flink runner fires no processing-time timers for Go) (default: impulse on flink, else timer)")
	add("read-ahead", countValue{&o.ReadAhead}, fmt.Sprintf("embedded runner: records read but not yet taken in by the dedup step before the source pauses; peak memory depends on it, not on the length of the log (default %d; other runners have their own flow control)", localrunner.DefaultReadAhead))
	add("dedup-cache", sizeValue{&p.DedupCacheBytes}, "bound on this process's cache of decoded dedup shards, e.g. 512MiB (default 1GiB; a miss costs a reload, never a verdict)")
	add("max-future", durationValue{&p.Event.MaxFuture}, "quarantine events further than this ahead of processing time")
	add("max-age", durationValue{&p.Event.MaxAge}, "quarantine events older than this behind their partition watermark (0 off)")
	add("max-line", sizeValue{&p.Event.MaxLine}, "longest accepted line: bytes or a size like 512KiB, 1MiB")
	add("dimensions", listValue{&p.Event.Dimensions}, "comma-separated payload fields to report by")
	add("report", stringValue{&o.Report}, "write a run report to PATH (.html, .md or .json, by extension)")
	add("log-level", levelValue{&o.LogLevel}, "debug, info, warn or error (Beam's and prism's own logs show from warn, or all with debug)")
	add("prism-ui-port", portValue{&o.PrismUIPort}, "serve prism's web UI (jobs, state, metrics) on localhost:PORT while the process runs (prism runner only)")
	add("demo", stringValue{&o.Demo}, "without --source: replay (a generated history, the default) or live (a generator writes ./"+DefaultLiveDir+" in real time; short windows, sink "+DefaultLiveSink+")")
	add("duration", durationValue{&o.Duration}, "stop a streaming run gracefully after this long (default: at Ctrl-C)")
	add("ui", stringValue{&o.UI}, "serve a live page (revisions per window, watermarks, audit counters) on [HOST:]PORT, loopback unless a host is given")
	add("shared-filesystem", boolValue{&o.SharedFilesystem}, "every worker sees this machine's local paths (a job server on this machine, an NFS mount): allow a local source, archive and sink off the in-process runner")
	add("control", stringValue{&o.Control}, "folder (local, or gs://BUCKET/PATH) where a graceful stop writes this run's stop request for the readers on every worker (default: FOLDER/"+controlName+" inside the source folder or Pub/Sub archive)")

	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if fs.Lookup(f.Name) != nil || strings.HasPrefix(f.Name, "test.") {
			return // ours wins; go test's flags are not the job's
		}
		add(f.Name, f.Value, f.Usage)
	})
	return fs
}

// stringValue and boolValue are the flag package's string and bool flags
// over a field (flag.StringVar would also write the default into it).
type stringValue struct{ s *string }

func (v stringValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}
func (v stringValue) Set(s string) error { *v.s = s; return nil }

type boolValue struct{ b *bool }

func (v boolValue) String() string {
	if v.b == nil || !*v.b {
		return "false"
	}
	return "true"
}
func (v boolValue) IsBoolFlag() bool { return true }
func (v boolValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "1", "t", "yes":
		*v.b = true
	case "false", "0", "f", "no":
		*v.b = false
	default:
		return fmt.Errorf("invalid boolean %q", s)
	}
	return nil
}

// Parse reads a command line (without the program name) into Options. It
// checks syntax only: a value that is not a duration, a size, a level or a
// sink string. Validate checks the settings together. An error is a
// *ConfigError, or flag.ErrHelp for -h/--help.
func Parse(args []string) (Options, error) {
	o := Defaults()
	var ferr error
	fs := newFlagSet(&o, &ferr)
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			return o, flag.ErrHelp
		case ferr != nil:
			return o, &ConfigError{Err: ferr}
		}
		return o, &ConfigError{Err: flagError(err)}
	}
	if rest := fs.Args(); len(rest) > 0 {
		return o, usagef("unexpected argument %q: flags take the form --name=value", rest[0])
	}
	if o.Demo == DemoLive {
		if err := applyLiveDefaults(fs); err != nil {
			return o, &ConfigError{Err: err}
		}
	}
	o.Runner = *runners.Runner
	if o.Runner == "" {
		o.Runner = DefaultRunner
	}
	if p := &o.Pipeline; p.DedupShards == 0 {
		d := p.WithDefaults()
		p.DedupShards = pipeline.ShardsFor(o.Runner, p.DesignRate, d.DedupRetention, d.Triggers.Window)
	}
	if o.Pipeline.EarlySource == "" {
		o.Pipeline.EarlySource = pipeline.EarlySourceFor(o.Runner)
	}
	if o.Pipeline.DedupOrder == "" {
		o.Pipeline.DedupOrder = pipeline.DedupOrderFor(o.Runner)
	}
	return o, nil
}

// flagError rewrites the flag package's messages in the --name form.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (see --help)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s: missing value", name)
	}
	if strings.HasPrefix(msg, "bad flag syntax: ") {
		return fmt.Errorf("bad flag syntax %q", strings.TrimPrefix(msg, "bad flag syntax: "))
	}
	return err
}

// Usage writes the flags and their defaults.
func Usage(w io.Writer) {
	o := Defaults()
	var ferr error
	fs := newFlagSet(&o, &ferr)
	fmt.Fprintf(w, `Usage: launch [flags]

Computes hourly revenue by event time from a raw-log folder or a Pub/Sub subscription (SPEC §6):
  launch                              the demo: generate ./%s once, replay it into revenue.db
  launch --demo=live [--ui=8080]      a generator writes events around now; watch EARLY, ON_TIME, LATE, FINAL
  launch --source=PATH                replay the folder's JSONL files, then stop
  launch --source=PATH --follow       keep watching the folder for new files
  launch --source=pubsub:projects/P/subscriptions/S [--pubsub-archive=DIR]
                                      read the subscription (streaming) until SIGINT/SIGTERM;
                                      every message is archived in DIR before it is acknowledged
                                      (PUBSUB_EMULATOR_HOST selects an emulator)

Flags:
`, DefaultDemoDir)
	ours := map[string]bool{}
	for _, name := range ownFlags {
		ours[name] = true
		f := fs.Lookup(name)
		fmt.Fprintf(w, "  --%-18s %s", name, f.Usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "0" { // a zero count takes the default its usage names
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
	var beamFlags []string
	fs.VisitAll(func(f *flag.Flag) {
		if !ours[f.Name] {
			beamFlags = append(beamFlags, "--"+f.Name)
		}
	})
	fmt.Fprintf(w, "\nBeam runner flags (--runner defaults to %s):\n", DefaultRunner)
	line := " "
	for _, f := range beamFlags {
		if len(line)+1+len(f) > 100 {
			fmt.Fprintln(w, line)
			line = " "
		}
		line += " " + f
	}
	fmt.Fprintln(w, line)
}

// ownFlags lists this command's flags in the order of SPEC §6.
var ownFlags = []string{"source", "follow", "settle", "discover-every", "pubsub-archive", "pubsub-pullers", "pubsub-shards", "pubsub-archive-fail-after", "sink", "bq-flush", "window", "early", "ooo-bound", "idle-timeout", "idle-advance",
	"allowed-lateness", "dedup-retention", "dedup-shards", "design-rate", "dedup-order", "dedup-cache", "read-ahead", "early-source", "max-future", "max-age", "max-line", "dimensions", "report", "log-level", "prism-ui-port", "demo", "duration", "ui",
	"shared-filesystem", "control"}

// Validate checks the settings together, before any work: every failure is
// a *ConfigError naming its flag. It looks at the source folder (it must
// exist) but creates nothing.
func (o Options) Validate() error {
	if o.IsPubSub() {
		// The subscription string first: a malformed one is the error to
		// report, whatever else is wrong.
		if _, _, err := pubsub.ParseSource(o.Source); err != nil {
			return &ConfigError{Err: err}
		}
	} else if o.PubSubArchive != "" || o.PubSubPullers != 0 || o.PubSubShards != 0 || o.PubSubArchiveFailAfter != 0 {
		return usagef("--pubsub-archive, --pubsub-pullers, --pubsub-shards and --pubsub-archive-fail-after apply to a Pub/Sub source (--source=pubsub:projects/P/subscriptions/S) only")
	}
	if err := o.validateDemo(); err != nil {
		return err
	}
	if o.Source == "" && o.Follow && o.Demo != DemoLive {
		return usagef("--follow needs --source: the demo log is complete, there is nothing to follow")
	}
	if err := o.Pipeline.Validate(); err != nil {
		return &ConfigError{Err: err}
	}
	if o.Report != "" {
		if err := report.CheckPath(o.Report); err != nil {
			return usagef("--report: %v", err)
		}
	}
	if o.ReadAhead != 0 && !cli.WorkersInProcess(o.Runner, *jobopts.EnvironmentType) {
		return usagef("--read-ahead bounds the embedded runner's in-process workers (prism, LOOPBACK); --runner=%s --environment_type=%s has its own flow control", o.Runner, *jobopts.EnvironmentType)
	}
	if o.PrismUIPort != 0 && !isPrism(o.Runner) {
		return usagef("--prism-ui-port: the web UI is prism's: it needs --runner=prism, got %q", o.Runner)
	}
	if err := o.flushPolicy().Validate(); err != nil {
		return usagef("--bq-flush: %v", err)
	}
	if o.QuietPeriod < 0 || o.StopTimeout < 0 {
		return usagef("stop timing must not be negative")
	}
	if o.PubSubArchiveFailAfter < 0 {
		return usagef("--pubsub-archive-fail-after must not be negative")
	}
	if o.Control != "" {
		if err := files.Check(o.Control); err != nil {
			return usagef("--control=%s: %v", o.Control, err)
		}
	}
	if err := o.placement(); err != nil {
		return &ConfigError{Err: err}
	}
	switch {
	case o.IsPubSub():
		// pubsub.Validate checks the archive too; the flag's own checks
		// first, so that the error names it.
		if a := o.ArchiveDir(); strings.Contains(a, "://") {
			if !strings.HasPrefix(a, "gs://") && !strings.HasPrefix(a, "s3://") {
				return usagef("--pubsub-archive=%s: want a local folder, gs://BUCKET/PATH or s3://BUCKET/PATH", a)
			}
		} else if !isPrism(o.Runner) {
			// Workers on other machines would each archive to their own
			// disk, which no restart and no reconcile reads.
			return usagef("--pubsub-archive=%s: a local archive needs --runner=prism; on %s use gs://BUCKET/PATH", a, o.Runner)
		} else if fi, err := os.Stat(o.ArchiveDir()); err == nil && !fi.IsDir() {
			return usagef("--pubsub-archive=%s: exists and is not a folder", o.ArchiveDir())
		}
		if err := pubsub.Validate(o.Source, o.pubsubOptions(o.Pipeline)); err != nil {
			return &ConfigError{Err: err}
		}
	case o.Source != "":
		if err := sources.Validate(o.Source, o.folderOptions(o.Pipeline)); err != nil {
			return &ConfigError{Err: err}
		}
	}
	return nil
}

// controlName is the default control folder inside the folder the job
// reads.
const controlName = "_control"

// ControlDir is where a graceful stop writes the run's stop request
// (sources.StopSignal): --control, or else the folder _control inside the
// folder the job reads: the Pub/Sub archive, or source (the folder read,
// the demo's and the live demo's too). Readers and reconcile skip names
// starting with '_' (rawlog.Ignored), so it is never read as a partition or
// an archive shard. It is reachable by every worker whenever that folder
// is, and lies where the launcher already writes for a Pub/Sub source; a
// source folder the launcher may not write needs --control.
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

// pubsubOptions are the Pub/Sub reader settings of a run with pipeline
// options po.
func (o Options) pubsubOptions(po pipeline.Options) pubsub.Options {
	return pubsub.Options{
		ArchiveDir:       o.PubSubArchive,
		Pullers:          o.PubSubPullers,
		Shards:           o.PubSubShards,
		ArchiveFailAfter: o.PubSubArchiveFailAfter,
		Watermark:        po.Watermark,
		Event:            po.Event,
		MaxPerCall:       o.MaxPerCall,
		PullTimeout:      o.PullTimeout,
		PollInterval:     o.PollInterval,
	}
}

// folderOptions are the reader settings of a run with pipeline options po.
func (o Options) folderOptions(po pipeline.Options) sources.FolderOptions {
	return sources.FolderOptions{
		Follow:       o.Follow,
		Watermark:    po.Watermark,
		Event:        po.Event,
		PollInterval: o.PollInterval,
		MaxPerCall:   o.MaxPerCall,
		Settle:       o.Settle,
		// DiscoverEvery is only set by the flag: 0 takes the default.
		DiscoverEvery: o.DiscoverEvery,
		// ReadAhead: the account is named when the job is built (Run).
		ReadAheadRecords: o.readAhead(),
	}
}

// readAhead is the read-ahead bound of the run's sources, in records: 0
// (none) unless the workers run in this process, where the bound's account
// lives (localrunner.ReadAhead).
func (o Options) readAhead() int {
	if !cli.WorkersInProcess(o.Runner, *jobopts.EnvironmentType) {
		return 0
	}
	return cmp.Or(o.ReadAhead, localrunner.DefaultReadAhead)
}

// runConfig is what the sink stores in run_config: the settings that shape
// window_start keys and which events a key holds (SPEC §5).
func (o Options) runConfig() map[string]string {
	po := o.Pipeline.WithDefaults()
	return map[string]string{
		"window":           po.Triggers.Window.String(),
		"dimensions":       strings.Join(po.Event.Dimensions, ","),
		"allowed_lateness": po.Triggers.AllowedLateness.String(),
	}
}

// flushPolicy is the BigQuery sink's batching with --bq-flush.
func (o Options) flushPolicy() sinks.FlushPolicy {
	p := sinks.DefaultFlushPolicy
	p.Interval = o.BQFlush
	return p
}

// placement refuses, before any work, the parts of a run that its workers
// could not reach: on a runner whose workers run in other processes (any
// but prism in this process), a local source folder (the demo's too), a
// local Pub/Sub archive, or a SQLite or local JSONL sink would be read or
// written by each worker on its own machine, while the launcher reads its
// own copy.
func (o Options) placement() error {
	p := cli.Placement{Runner: o.Runner, EnvironmentType: *jobopts.EnvironmentType, Shared: o.SharedFilesystem}
	switch o.Sink.Scheme {
	case sinks.SchemeSQLite:
		p.Local("--sink="+o.Sink.String(), "use --sink=bigquery:PROJECT.DATASET")
	case sinks.SchemeJSONL:
		if cli.LocalPath(o.Sink.Path) {
			p.Local("--sink="+o.Sink.String(), "use --sink=bigquery:PROJECT.DATASET")
		}
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
