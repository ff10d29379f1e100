package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/files"
	_ "github.com/revenue-stream/hourly/internal/files/gcs" // gs:// paths
	_ "github.com/revenue-stream/hourly/internal/files/s3"  // s3:// paths
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/bigquery"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/triggers"
)

// Exit codes of SPEC §6, so that a daily scheduler can tell a normal day from an anomaly.
const (
	// ExitClean: nothing material left (none found, or all explained and applied).
	ExitClean = 0
	// ExitUnexplained: unexplained differences or unreadable sink rows: a human must look.
	ExitUnexplained = 1
	// ExitError: the run failed (bad flags, an unreadable source or sink).
	ExitError = 2
	// ExitPending: every material difference is explained, some not yet written: run with --apply.
	ExitPending = 3
)

// Outcome is a finished run.
type Outcome struct {
	RunID             string
	Options           Options
	Started, Finished time.Time // wall clock
	Partitions        []string
	Stats             Stats
	// Comparison is the pipeline's (CompareWithSink); the driver does not compare again.
	Comparison
	// Counters are the comparison's figures by metric name: the runner's counters when
	// CountersFromRunner, else Comparison.Metrics().
	Counters           map[string]int64
	CountersFromRunner bool
	// WindowDelta is the runner's MetricWindowDeltaMicros distribution (zero if none).
	WindowDelta metrics.DistributionSum
	// Applied counts corrections written (--apply).
	Applied int
}

// ExitCode maps the outcome to SPEC §6's exit codes.
func (o Outcome) ExitCode() int {
	if len(o.Unexplained()) > 0 || len(o.Unreadable) > 0 {
		return ExitUnexplained
	}
	if slices.ContainsFunc(o.Material(), func(d Diff) bool { return d.AppliedRevision == 0 }) {
		return ExitPending
	}
	return ExitClean
}

// Run reconciles: it checks the source and sink, recomputes and compares in a Beam batch pipeline
// (--runner, prism by default), writes reconcile_diffs, applies with --apply and writes the report.
// Any error means exit code 2. With o.DryRun it only writes the pipeline proto (see DryRun).
func Run(ctx context.Context, o Options) (Outcome, error) {
	if o.DryRun != "" {
		return Outcome{}, DryRun(ctx, o, os.Stdout) // it validates o
	}
	out := Outcome{Options: o, Started: time.Now().UTC()}
	set, err := out.plan(true)
	if err != nil {
		return Outcome{}, err
	}
	st, err := OpenStore(ctx, o.Sink)
	if err != nil {
		return Outcome{}, err
	}
	defer st.Close()
	if err := st.CheckRunConfig(ctx, o.RunConfig()); err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	conflicts, tooLate, err := streamEvidence(ctx, st, &set)
	if err != nil {
		return Outcome{}, err
	}
	if err := recompute(ctx, &out, set, conflicts, tooLate); err != nil {
		return Outcome{}, err
	}
	if u := out.Stats.Unterminated; len(u) > 0 {
		slog.Warn("reconcile: files end in a line without a newline; those lines were read as lines",
			"count", len(u), "first", u[0])
	}
	if want := out.Comparison.Metrics(); !out.CountersFromRunner {
		slog.Warn("reconcile: the runner reported no comparison counters; the metrics are computed from the comparison instead")
		out.Counters = want
	} else if !maps.Equal(out.Counters, want) {
		slog.Warn("reconcile: the runner's comparison counters differ from the comparison the pipeline wrote (lost or repeated counter updates?)",
			"counters", metricsLine(out.Counters), "comparison", metricsLine(want))
	}

	// Diffs before the corrections, then applied_revision as the changelog has it (markApplied).
	err = st.WriteDiffs(ctx, sinkDiffs(out.RunID, out.Diffs))
	if err == nil {
		var errApply error
		if o.Apply {
			errApply = apply(ctx, st, out.Diffs, o.Triggers, out.RunID)
		}
		out.Applied, err = markApplied(ctx, st, &out.Comparison, out.RunID, o.Range)
		err = cmp.Or(errApply, err)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	out.Finished = time.Now().UTC()
	if o.Report != "" {
		return out, WriteReport(o.Report, out)
	}
	return out, nil
}

// plan validates the run's options and settles what a run and a dry run share: the run's id, the
// recomputation's settings and the raw log's partitions (listed only when list is set).
func (out *Outcome) plan(list bool) (Settings, error) {
	o := out.Options
	if err := o.Validate(); err != nil {
		return Settings{}, err
	}
	out.RunID = cmp.Or(o.RunID, NewRunID(out.Started))
	set := o.Settings
	set.Now = cmp.Or(o.Now, out.Started)
	if !list {
		return set, nil
	}
	err := files.CheckDir(context.Background(), o.Source)
	if err == nil {
		out.Partitions, err = rawlog.ReadablePartitions(o.Source)
	}
	if err != nil {
		return set, fmt.Errorf("--source %s: %w", o.Source, err)
	}
	return set, nil
}

// OpenStore opens the sink Options.Validate accepted: a SQLite file, which must exist (opening
// would create it), or a BigQuery dataset.
func OpenStore(ctx context.Context, spec sink.Spec) (Store, error) {
	r, ok, err := sink.OpenReader(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("--sink %s: %w", spec, err)
	}
	if !ok {
		return nil, fmt.Errorf("--sink %s: no such file", spec)
	}
	st, isStore := r.(Store)
	if !isStore {
		r.Close()
		return nil, fmt.Errorf("--sink %s: cannot store reconcile_diffs", spec)
	}
	return st, nil
}

// streamEvidence reads the stream's audit rows the recomputation needs: conflicts, too-late events
// and the positions quarantined as future_event_time. The stream's named positions ("pubsub:<message
// id>") become the raw log's file positions through the archive's id sidecars; an unknown one stays.
func streamEvidence(ctx context.Context, st Store, set *Settings) ([]model.Conflict, []model.TooLate, error) {
	a, err := st.Audit(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile: %w", err)
	}
	for _, r := range a.Quarantined {
		if r.Reason == model.ReasonFutureEventTime {
			set.StreamFuture = append(set.StreamFuture, r.Position)
		}
	}
	var refs []*string
	for i := range a.Conflicts {
		refs = append(refs, &a.Conflicts[i].Position)
	}
	for i := range a.TooLate {
		refs = append(refs, &a.TooLate[i].Position)
	}
	for i := range set.StreamFuture {
		refs = append(refs, &set.StreamFuture[i])
	}
	resolved, err := rawlog.ResolveIDPositions(set.Source, slicesx.Map(refs, func(r *string) string { return *r }))
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile: %w", err)
	}
	for _, r := range refs {
		if f, ok := resolved[*r]; ok {
			*r = f
		}
	}
	if len(resolved) > 0 {
		slog.Debug("reconcile: stream positions resolved through the archive's id sidecars", "positions", len(resolved))
	}
	return a.Conflicts, a.TooLate, nil
}

// recompute builds and runs the pipeline and reads its result and metrics into out.
func recompute(ctx context.Context, out *Outcome, set Settings, conflicts []model.Conflict, tooLate []model.TooLate) error {
	o := out.Options
	dir := o.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "reconcile-")
		if err != nil {
			return fmt.Errorf("reconcile: work dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	path := resultPath(dir, out.RunID)
	p, _, err := graph(ctx, o, out.Partitions, set, conflicts, tooLate, path)
	if err != nil {
		return err
	}
	start := time.Now()
	localrunner.UseSafeOptions(o.Runner)
	if err := cli.UseSelfAsWorker(); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return fmt.Errorf("reconcile: pipeline: %w", err)
	}
	localrunner.RemoveJobPlaceholder(ctx, pr.JobID()) // the SDK leaves one per loopback job
	out.readFigures(pr)
	res, err := ReadResult(ctx, path)
	if err != nil {
		return err
	}
	if res.Comparison == nil {
		return fmt.Errorf("reconcile: read result %s: no comparison (incomplete result?)", path)
	}
	out.Stats, out.Comparison = res.Stats, *res.Comparison
	slog.Info("reconcile: recomputed and compared", "records", res.Stats.Read, "ids", res.Stats.IDs,
		"keys", len(res.Totals), "compared", res.Comparison.Checked, "differing", len(res.Comparison.Diffs), "future_counted", res.Comparison.FutureCounted,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

func resultPath(dir, runID string) string { return files.Join(dir, runID, "recomputed.json") }

// graph is the reconcile pipeline, its result written to path, and its proto checked against the
// runner's capabilities.
func graph(ctx context.Context, o Options, parts []string, set Settings, conflicts []model.Conflict,
	tooLate []model.TooLate, path string) (*beam.Pipeline, *pipepb.Pipeline, error) {
	spec := o.Sink
	if spec.Scheme == sink.SchemeSQLite { // absolute: a worker's working directory need not be the driver's
		abs, err := filepath.Abs(spec.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("--sink %s: %w", spec, err)
		}
		spec.Path = abs
	}
	p, s := beam.NewPipelineWithRoot()
	partitions := beam.CreateList(s, parts)
	evidence := StreamEvidence(s, conflicts, tooLate, set.Shards)
	totals, stats := Recompute(s, partitions, evidence, set)
	comparison := CompareWithSink(s, totals, CompareSettings{
		Sink: spec, Range: o.Range, Triggers: o.Triggers, ToleranceMicros: o.ToleranceMicros,
	})
	WriteResult(s, totals, stats, comparison, path)
	pb, err := cli.CheckedProto(ctx, o.Runner, p)
	if err != nil {
		return nil, nil, fmt.Errorf("--runner=%s: %w", o.Runner, err)
	}
	return p, pb, nil
}

// DryRun writes the checked proto of the pipeline Run would submit to o.DryRun. It contacts no
// service: no sink, no bucket listing, no work dir.
func DryRun(ctx context.Context, o Options, stdout io.Writer) error {
	out := Outcome{Options: o, Started: time.Now().UTC()}
	set, err := out.plan(files.IsLocal(o.Source))
	if err != nil {
		return err
	}
	dir := cmp.Or(o.WorkDir, filepath.Join(os.TempDir(), "reconcile-dry-run"))
	_, pb, err := graph(ctx, o, out.Partitions, set, nil, nil, resultPath(dir, out.RunID))
	if err != nil {
		return err
	}
	return cli.WriteDryRun(o.DryRun, stdout, pb)
}

// readFigures reads the comparison's counters and distribution from a pipeline result.
func (out *Outcome) readFigures(pr beam.PipelineResult) {
	if pr == nil {
		return
	}
	m, ok := metrics.OfJob(pr, "reconcile: the pipeline's metrics are not available")
	if !ok {
		return
	}
	named, _, _ := metrics.Named(m, Namespace)
	out.CountersFromRunner = slices.ContainsFunc(MetricNames, func(n string) bool { _, ok := named[n]; return ok })
	if out.CountersFromRunner {
		out.Counters = make(map[string]int64, len(MetricNames))
		for _, n := range MetricNames {
			out.Counters[n] = named[n] // a counter left at zero may not be reported
		}
	}
	out.WindowDelta = metrics.Distributions(m, Namespace)[MetricWindowDeltaMicros]
}

// Store is what the driver needs of a versioned sink (*sqlite.SQLite, *bigquery.BigQuery): run_config,
// the audit tables, the versioned Write and reconcile_diffs. Current rows are read by
// CompareWithSink.
type Store interface {
	sink.Reader
	sink.ConfigChecker
	Diffs(ctx context.Context) ([]sink.Diff, error)
	WriteDiffs(ctx context.Context, diffs []sink.Diff) error
}

var (
	_ Store = (*sqlite.SQLite)(nil)
	_ Store = (*bigquery.BigQuery)(nil)
)

// Writer is the changelog writer of a run's corrections.
func Writer(runID string) string { return model.ReconcileWriter + runID }

// Corrections returns the rows --apply writes: each applicable diff's recomputed total as a FINAL
// row one revision above the current one (1 for a missing window). The sink accepts a lower count
// from a reconcile writer only (SPEC §4).
func Corrections(diffs []Diff, p triggers.Policy, runID string) []model.Row {
	var out []model.Row
	for _, d := range diffs {
		if !d.Applicable() {
			continue
		}
		out = append(out, model.Row{
			WindowStart:   d.WindowStart,
			WindowEnd:     p.WindowEnd(d.WindowStart),
			Dims:          d.Dims,
			RevenueMicros: d.Recomputed.RevenueMicros,
			EventCount:    d.Recomputed.Count,
			Revision:      d.Streamed.Revision + 1, // 0 + 1 when there is no row
			State:         model.Final,
			Writer:        Writer(runID),
		})
	}
	return out
}

// apply writes the corrections in one batch. A correction the sink refuses (another writer changed
// its key during the run) stays pending.
func apply(ctx context.Context, st Store, diffs []Diff, p triggers.Policy, runID string) error {
	rows := Corrections(diffs, p, runID)
	if len(rows) == 0 {
		return nil
	}
	res, err := st.Write(ctx, sink.Batch{Rows: rows})
	if err != nil {
		return fmt.Errorf("apply %d corrections: %w", len(rows), err)
	}
	if res.Accepted != len(rows) {
		slog.Warn("reconcile: apply: the sink refused corrections: another writer changed those keys during the run; they stay pending",
			"accepted", res.Accepted, "corrections", len(rows))
	}
	return nil
}

// markApplied reads back which corrections landed, whatever part of a batch the sink took, and
// sets applied_revision (SPEC §5): on this run's diffs the revision apply wrote, and on an earlier
// run's rows in the range left NULL (a run interrupted between its corrections and its diffs, or
// this run's earlier attempt under the same --run-id) the one its writer wrote. It returns how many of this run's landed.
func markApplied(ctx context.Context, st Store, c *Comparison, runID string, r Range) (int, error) {
	stored, err := st.Diffs(ctx)
	if err != nil {
		return 0, err
	}
	mine := map[Key]bool{} // rewritten from c below
	for _, d := range c.Diffs {
		mine[d.Key] = true
	}
	fix := slices.DeleteFunc(stored, func(d sink.Diff) bool {
		return d.AppliedRevision != nil || d.RunID == runID && mine[Key{d.WindowStart, d.Dims}] || r.HasFrom && d.WindowStart < r.From
	})
	starts := slicesx.Map(c.where(Diff.Applicable), func(d Diff) int64 { return d.WindowStart })
	starts = append(starts, slicesx.Map(fix, func(d sink.Diff) int64 { return d.WindowStart })...)
	if len(starts) == 0 {
		return 0, nil
	}
	from := slices.Min(starts)
	log, err := st.Changelog(ctx, sink.Query{From: &from})
	if _, ok := sink.Unreadable(err); !ok {
		return 0, err // an unreadable row is skipped here: the comparison reports it
	}
	written := map[string]int64{}
	for _, e := range log {
		if e.ByReconcile() {
			written[e.Writer+" "+Key{e.WindowStart, e.Dims}.String()] = e.Revision
		}
	}
	n := 0
	for i := range c.Diffs {
		if d := &c.Diffs[i]; d.Applicable() && written[Writer(runID)+" "+d.Key.String()] == d.Streamed.Revision+1 {
			d.AppliedRevision, n = d.Streamed.Revision+1, n+1
		}
	}
	var done []sink.Diff
	for _, d := range fix {
		if rev, ok := written[Writer(d.RunID)+" "+Key{d.WindowStart, d.Dims}.String()]; ok {
			d.AppliedRevision = &rev
			done = append(done, d)
		}
	}
	if n > 0 {
		done = append(done, sinkDiffs(runID, c.Diffs)...)
	}
	return n, st.WriteDiffs(ctx, done)
}

func sinkDiffs(runID string, diffs []Diff) []sink.Diff {
	return slicesx.Map(diffs, func(d Diff) sink.Diff {
		sd := sink.Diff{
			RunID:                   runID,
			WindowStart:             d.WindowStart,
			Dims:                    d.Dims,
			StreamedRevenueMicros:   d.Streamed.RevenueMicros,
			RecomputedRevenueMicros: d.Recomputed.RevenueMicros,
			DeltaMicros:             d.DeltaMicros(),
			StreamedCount:           d.Streamed.EventCount,
			RecomputedCount:         d.Recomputed.Count,
			Classification:          d.Classification,
		}
		if d.AppliedRevision > 0 {
			sd.AppliedRevision = &d.AppliedRevision
		}
		return sd
	})
}
