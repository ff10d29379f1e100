package reconcile

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"

	_ "github.com/revenue-stream/hourly/sinks/all" // every --sink backend, for this process and its in-process workers
)

// Main runs cmd/reconcile with args (without the program name) and returns its SPEC §6 exit code;
// a bad flag is one line on stderr before any work.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(command, args, stdout, stderr)
}

// parsed is a command line read: the Options, and the range flags Range is read from.
type parsed struct {
	Options
	r RangeFlags
}

// command is cmd/reconcile: --help, the flag table, the range read from --from, --to and --date,
// and the run with its SPEC §6 exit codes.
var command = cli.Command[parsed]{
	Name: "reconcile",
	Synopsis: `Usage: reconcile --source=PATH --sink=sqlite:PATH [--from=HOUR --to=HOUR | --date=DAY] [--apply] [flags]

Recomputes every window from the raw log with the stream's rules, compares it with the sink's rows,
writes reconcile_diffs and, with --apply, the corrections (SPEC §6). A difference is material when
the counts differ or the revenue differs by more than --tolerance; it is explained when the audit
tables account for it (too-late events, a window whose every event was too late).

Exit codes, for a daily scheduler:
  ` + strconv.Itoa(ExitClean) + `  nothing material left: none found, or every one explained and written with --apply
  ` + strconv.Itoa(ExitUnexplained) + `  unexplained differences or unreadable sink rows: a human must look (whatever --apply did)
  ` + strconv.Itoa(ExitError) + `  error: a bad flag, an unreadable source or sink (one line on stderr)
  ` + strconv.Itoa(ExitPending) + `  explained corrections pending: run again with --apply
Under "go run" the go command reports a non-zero code as "exit status N" and exits 1 itself.`,
	Defaults: func() parsed { return parsed{Options: Defaults()} },
	Flags:    func(p *parsed) []cli.Group { return flagTable(&p.Options, &p.r) },
	Complete: func(p *parsed, _ *cli.FlagSet) (err error) {
		if p.Range, err = p.r.Range(); err != nil {
			return err
		}
		// The Beam runner flags are the SDK's process-wide ones.
		p.Runner, p.EnvironmentType = *runners.Runner, *jobopts.EnvironmentType
		return nil
	},
	Validate: func(p parsed) (slog.Level, error) { return p.LogLevel, p.Validate() },
	Run: func(ctx context.Context, p parsed, stdout io.Writer) (int, error) {
		o := p.Options
		var out Outcome // a dry run's: ExitClean
		var err error
		if o.DryRun != "" {
			err = DryRun(ctx, o, stdout)
		} else if out, err = Run(ctx, o); out.RunID != "" {
			// A run that got as far as comparing has something to show.
			err = cmp.Or(err, WriteSummary(stdout, out))
		}
		if err != nil {
			return ExitError, err
		}
		return out.ExitCode(), nil
	},
}

// flagTable is cmd/reconcile's flag table over o (SPEC §6): every flag
// once, in the groups --help shows; the Beam runner's follow them.
func flagTable(o *Options, r *RangeFlags) []cli.Group {
	stream := cli.Stream{Event: &o.Event, Watermark: &o.Watermark, Triggers: &o.Triggers, Retention: &o.DedupRetention}
	return []cli.Group{
		{Title: "What to check", Flags: slices.Concat([]cli.Flag{
			{Name: "source", Value: cli.String(&o.Source), Arg: "PATH", Usage: "raw-log folder to recompute from (local, gs://, s3://; required)"},
			{Name: "sink", Value: cli.Func(&o.Sink, "SINK", sink.ParseSpec, sink.Spec.String),
				Usage: "sink to compare with and correct: sqlite:PATH or bigquery:PROJECT.DATASET"},
		}, r.Flags("check"), []cli.Flag{
			{Name: "tolerance", Value: cli.Func(&o.ToleranceMicros, "AMOUNT", parseAmount, model.FormatMicros), Default: "0",
				Usage: "revenue difference up to which a window with equal counts is not material"},
			{Name: "apply", Value: cli.Bool(&o.Apply), Usage: "write the material corrections as higher FINAL revisions (writer reconcile:<run_id>)"},
			cli.Shared("report", cli.String(&o.Report)),
			{Name: "top", Value: cli.Int(&o.Top), Usage: "differences listed in the summary"},
		})},
		{Title: "The stream's settings (as the sink's rows were computed; run_config checks window, dimensions, lateness)", Flags: append(
			stream.Flags("window", "allowed-lateness", "dimensions", "ooo-bound", "max-future", "max-age", "max-line"),
			slicesx.Map(stream.Flags("early", "idle-timeout", "dedup-retention"), checkedOnly)...)},
		{Title: "The run", Flags: []cli.Flag{
			{Name: "shards", Value: cli.Int(&o.Shards), Usage: "event-id shards of the choice step"},
			{Name: "work-dir", Value: cli.String(&o.WorkDir), Arg: "DIR", Default: "a local temporary folder",
				Usage: "where the pipeline leaves its result for the driver (any Beam filesystem, e.g. gs://BUCKET/tmp on Dataflow)"},
			{Name: "run-id", Value: cli.String(&o.RunID), Arg: "ID", Default: "UTC start time and a random suffix",
				Usage: "the run's id in reconcile_diffs and in the changelog's writer"},
			cli.Shared("log-level", cli.Level(&o.LogLevel)),
			cli.Shared("shared-filesystem", cli.Bool(&o.SharedFilesystem)),
			cli.Shared("dry-run", cli.DryRun(&o.DryRun)),
		}},
	}
}

// checkedOnly is a shared flag (SPEC §6) reconcile takes so that the stream's own settings can be
// passed as they are: refused where launch refuses them, and otherwise unused.
func checkedOnly(f cli.Flag) cli.Flag {
	f.Usage += "; validated as launch does, but no part in a recomputation"
	return f
}

// parseAmount reads --tolerance; Options.Validate refuses a negative one.
func parseAmount(s string) (int64, error) { return event.ParseAmount([]byte(s)) }
