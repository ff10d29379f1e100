// Package launch is cmd/launch as a library: flags parsed into Options, checked, the job built
// (source → pipeline.Build → sink.Write), run (prism by default), stopped gracefully on
// SIGINT/SIGTERM, and summarised.
package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
	"github.com/revenue-stream/hourly/transforms"

	_ "github.com/revenue-stream/hourly/sinks/all" // every --sink backend, for this process and its in-process workers
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1             // the job failed, was cancelled outside the launcher or could not be stopped, or its figures break conservation
	ExitUsage  = cli.ExitUsage // a bad flag, setting, source or sink: nothing was run
)

// Main runs the command with args (without the program name) and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(Command, args, stdout, stderr)
}

// Command is cmd/launch: the flag table (flagTable), the settings derived from several flags
// (complete), the run and its exit codes. Its Parse reads a command line into Options without
// checking the settings.
var Command = cli.Command[Options]{
	Name: "launch",
	Synopsis: fmt.Sprintf(`Usage: launch [flags]

Computes hourly revenue by event time from a raw-log folder or a Pub/Sub subscription (SPEC §6):
  launch                              the demo: generate ./%s once, replay it into revenue.db
  launch --demo=live [--ui=8080]      a generator writes events around now; watch EARLY, ON_TIME, LATE, FINAL
  launch --source=PATH                replay the folder's JSONL files, then stop
  launch --source=PATH --follow       keep watching the folder for new files
  launch --source=pubsub:projects/P/subscriptions/S [--pubsub-archive=DIR]
                                      read the subscription (streaming) until SIGINT/SIGTERM;
                                      every message is archived in DIR before it is acknowledged
                                      (PUBSUB_EMULATOR_HOST selects an emulator)

Exit codes: 0 the job ended (DONE, or stopped gracefully) with every record accounted for;
1 the job failed, was cancelled outside the launcher (CANCELLED) or could not be stopped,
or its figures break conservation; 2 a bad flag, setting, source or sink (one line on
stderr, nothing run). Under "go run" the go command reports any non-zero code
as "exit status N" and exits 1 itself.`, DefaultDemoDir),
	Defaults: Defaults,
	Flags:    flagTable,
	Complete: complete,
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
}

// flagTable is cmd/launch's flag table over o, in --help's groups. A default is o's field before
// parsing, or Default where the zero value stands for a rule.
func flagTable(o *Options) []cli.Group {
	p := &o.Pipeline
	stream := cli.Stream{Event: &p.Event, Watermark: &p.Watermark, Triggers: &p.Triggers, Retention: &p.DedupRetention}
	return []cli.Group{
		{Title: "Input", Flags: []cli.Flag{
			{Name: "source", Value: cli.String(&o.Source), Arg: "PATH",
				Usage:   "raw-log folder to read (local, gs://, s3://), or pubsub:projects/P/subscriptions/S",
				Default: "the demo, generated once into ./" + DefaultDemoDir},
			{Name: "follow", Value: cli.Bool(&o.Follow),
				Usage: "keep watching the folder for new files (streaming) instead of replaying it once"},
			{Name: "settle", Value: cli.Duration(&o.Settle), Default: cli.FormatDuration(sources.DefaultSettle),
				Usage: "--follow: read a file's last line without a newline once the file has not changed for this long"},
			{Name: "discover-every", Value: cli.Duration(&o.DiscoverEvery), Default: cli.FormatDuration(sources.DefaultDiscoverEvery),
				Usage: "--follow: look for new partition folders this often and read them from their first file"},
			{Name: "pubsub-archive", Value: cli.String(&o.PubSub.ArchiveDir), Arg: "DIR",
				Usage:   "folder (local, gs://BUCKET/PATH or s3://BUCKET/PATH) a Pub/Sub source archives every message to before acknowledging it; the source of truth the records are emitted from",
				Default: "./" + pubsub.DefaultArchiveRoot + "/<subscription id>"},
			{Name: "pubsub-pullers", Value: cli.Count(&o.PubSub.Pullers), Default: strconv.Itoa(pubsub.DefaultPullers),
				Usage: "Pub/Sub pull streams per reader key, each pulling, archiving and acknowledging"},
			{Name: "pubsub-shards", Value: cli.Count(&o.PubSub.Shards), Default: "1",
				Usage: "Pub/Sub reader keys over the one subscription, each its own archive partition and watermark: spreads the reading over workers"},
			{Name: "pubsub-archive-fail-after", Value: cli.Duration(&o.PubSub.ArchiveFailAfter), Default: cli.FormatDuration(pubsub.DefaultArchiveFailAfter),
				Usage: "fail the job when the Pub/Sub archive cannot be written for this long"},
			{Name: "pubsub-stall-after", Value: cli.Duration(&o.PubSub.StallAfter), Default: cli.FormatDuration(pubsub.DefaultStallAfter),
				Usage: "log one line (and show it on the progress line) when a Pub/Sub reader key holds messages and has emitted none for this long, naming what it waits on"},
		}},
		{Title: "Output", Flags: []cli.Flag{
			{Name: "sink", Value: cli.Func(&o.Sink, "SINK", sink.ParseSpec, sink.Spec.String),
				Usage: "where rows go: sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET"},
			{Name: "bq-flush", Value: cli.Duration(&o.BQFlush),
				Usage: "bigquery sink: append buffered rows this often (Storage Write API; at most 2 appends per table per interval, more only past 8 MB)"},
			cli.Shared("report", cli.String(&o.Report)),
			cli.Shared("dry-run", cli.DryRun(&o.DryRun)),
			{Name: "rehearse", Value: cli.String(&o.Rehearse), Arg: "RUNNER",
				Usage: "run on prism the pipeline RUNNER (flink, universal, dataflow) would be sent: its capability check and the defaults chosen from its capabilities (--early-source, --dedup-order); placement and scale stay prism's"},
		}},
		{Title: "Event time, windows and triggers (SPEC §2)", Flags: append(stream.Flags("window", "early", "ooo-bound", "idle-timeout", "idle-advance", "allowed-lateness"),
			cli.Flag{Name: "early-source", Value: cli.String(&p.EarlySource), Arg: "SOURCE", Default: "timer where the runner fires processing-time timers (prism, dataflow), else impulse",
				Usage: "what drives EARLY rows: timer (processing-time timers) or impulse (a periodic impulse; the portable Flink runner fires no processing-time timers for Go)"},
		)},
		{Title: "Validation (SPEC §3)", Flags: stream.Flags("max-future", "max-age", "max-line", "dimensions")},
		{Title: "Dedup and memory", Flags: append(stream.Flags("dedup-retention"), []cli.Flag{
			{Name: "dedup-shards", Value: cli.Count(&p.DedupShards), Default: fmt.Sprintf("%d on prism, else sized from --design-rate", pipeline.DefaultShards),
				Usage: "dedup state keys; off prism sized so that no key exceeds 64 MB (docs/capacity.md)"},
			{Name: "design-rate", Value: cli.Count(&p.DesignRate), Default: strconv.Itoa(pipeline.DefaultDesignRate),
				Usage: "peak events/s the dedup shards are sized for off prism"},
			{Name: "dedup-order", Value: cli.String(&p.DedupOrder), Arg: "ORDER", Default: "arrival on prism, else position",
				Usage: "position: hold each batch until the watermark and judge in source-position order, so the earlier of two copies from one partition counts however the runner delivers them; arrival: as delivered (prism delivers in order)"},
			{Name: "dedup-cache", Value: cli.Func(&p.DedupCacheBytes, "SIZE", parseCacheSize, cli.FormatSize),
				Default: cli.FormatSize(transforms.DefaultDedupCacheBytes) + " on prism, else what the shards a worker owns hold (--workers; docs/capacity.md)",
				Usage:   "bound on a process's cache of decoded dedup shards (a miss costs a reload from the runner's state, never a verdict; dedup_state_reloads counts them); a worker caps it at its memory limit less 1 GiB"},
			{Name: "workers", Value: cli.Count(&o.Workers), Default: "--num_workers (Dataflow), else --parallelism (Flink), else one worker owning every shard",
				Usage: "off prism: the worker count the dedup cache is sized for (shards per worker); with more than one Flink task slot per TaskManager give the TaskManagers"},
			{Name: "read-ahead", Value: cli.Count(&o.ReadAheadRecords), Default: strconv.Itoa(flow.DefaultReadAhead),
				Usage: "embedded runner: records read but not yet taken in by the dedup step before the source pauses (nor does a partition read eight windows of event time past what dedup took); peak memory depends on it, not on the length of the log (other runners have their own flow control)"},
		}...)},
		{Title: "Demo, live views and logs", Flags: []cli.Flag{
			{Name: "demo", Value: cli.String(&o.Demo), Arg: "MODE", Default: DemoReplay,
				Usage: "without --source: replay a generated history, or live: a generator writes ./" + live.DemoDir + " in real time (short windows, sink " + live.DemoSink + ")"},
			{Name: "duration", Value: cli.Duration(&o.Duration), Default: "until Ctrl-C",
				Usage: "stop a streaming run gracefully after this long"},
			{Name: "ui", Value: cli.String(&o.UI), Arg: "[HOST:]PORT",
				Usage: "serve the live page (revisions per window, watermarks, audit) on PORT of the loopback address, or on HOST:PORT"},
			{Name: "metrics-addr", Value: cli.String(&o.MetricsAddr), Arg: "[HOST:]PORT",
				Usage: "serve the job's figures for Prometheus at /metrics on PORT of the loopback address, or on HOST:PORT (the --ui page serves them too)"},
			{Name: "prism-ui-port", Value: cli.Port(&o.PrismUIPort),
				Usage: "serve prism's web UI (jobs, state, metrics) on localhost:PORT while the process runs (prism runner only)"},
			cli.Shared("log-level", cli.Level(&o.LogLevel)),
		}},
		{Title: "Workers", Flags: []cli.Flag{
			cli.Shared("shared-filesystem", cli.Bool(&o.SharedFilesystem)),
			{Name: "control", Value: cli.String(&o.Control), Arg: "DIR", Default: "FOLDER/" + controlName + " in the source folder or Pub/Sub archive",
				Usage: "folder (local, or gs://BUCKET/PATH) where a graceful stop writes this run's stop request for the readers on every worker"},
		}},
	}
}

// parseCacheSize reads --dedup-cache: cli.ParseSize's units without its 1 GiB cap.
func parseCacheSize(s string) (int, error) {
	n, mult, err := cli.SplitSize(s)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: want a positive size like 512MiB or 23GiB", s)
	}
	return int(n * mult), nil
}

// complete sets the live demo's defaults on the flags the command line left alone, then the
// settings whose defaults depend on the runner.
func complete(o *Options, fs *cli.FlagSet) error {
	if o.Demo == DemoLive {
		if err := live.SetDemoDefaults(fs); err != nil {
			return err
		}
	}
	o.Runner = cmp.Or(*runners.Runner, DefaultRunner)
	p := &o.Pipeline
	*p = p.Sized(o.Runner, o.workers())
	p.EarlySource = cmp.Or(p.EarlySource, pipeline.EarlySourceFor(o.profileRunner()))
	p.DedupOrder = cmp.Or(p.DedupOrder, pipeline.DedupOrderFor(o.profileRunner()))
	return nil
}
