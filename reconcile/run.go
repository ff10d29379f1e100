package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/rawlog"
	"github.com/revenue-stream/hourly/sinks"
)

// Exit codes of SPEC §6.
const (
	ExitClean    = 0 // nothing material found
	ExitMaterial = 1 // material differences found (with --apply, written)
	ExitError    = 2 // the run failed
)

// Outcome is a finished run.
type Outcome struct {
	RunID   string
	Options Options
	// Started and Finished bound the run (wall clock).
	Started, Finished time.Time
	// Partitions are the raw log's partitions.
	Partitions []string
	Stats      Stats
	Comparison
	// Applied counts corrections written (--apply).
	Applied int
}

// ExitCode maps the outcome to SPEC §6's exit codes.
func (o Outcome) ExitCode() int {
	if len(o.Material()) > 0 {
		return ExitMaterial
	}
	return ExitClean
}

// Run reconciles: it checks the source and the sink, recomputes the raw log
// in a Beam batch pipeline (on the runner the --runner flag names, prism by
// default), compares with the sink's rows, writes reconcile_diffs, applies
// material corrections with --apply, and writes the report. Any error means
// exit code 2; errors before the pipeline starts come before any work.
func Run(ctx context.Context, o Options) (Outcome, error) {
	if err := o.Validate(); err != nil {
		return Outcome{}, err
	}
	out := Outcome{Options: o, Started: time.Now().UTC(), RunID: o.RunID}
	if out.RunID == "" {
		out.RunID = NewRunID(out.Started)
	}
	readAt := o.Now
	if readAt.IsZero() {
		readAt = out.Started
	}

	parts, err := checkSource(o.Source)
	if err != nil {
		return Outcome{}, err
	}
	out.Partitions = parts
	st, err := OpenStore(ctx, o.Sink)
	if err != nil {
		return Outcome{}, err
	}
	defer st.Close()
	if err := st.CheckRunConfig(ctx, o.RunConfig()); err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	conflicts, err := st.Conflicts(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	tooLate, err := st.TooLate(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	future, err := streamFuture(ctx, st)
	if err != nil {
		return Outcome{}, err
	}

	res, err := recompute(ctx, o, out.RunID, parts, o.settings(readAt, future), conflicts, tooLate)
	if err != nil {
		return Outcome{}, err
	}
	out.Stats = res.Stats
	if len(res.Stats.Unterminated) > 0 {
		slog.Warn("reconcile: files end in a line without a newline; those lines were not read",
			"count", len(res.Stats.Unterminated), "first", res.Stats.Unterminated[0])
	}

	// The rows are read after the recomputation, as late as possible: a
	// window the stream finalised meanwhile is then compared as FINAL.
	rows, err := st.CurrentRows(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	horizon, hasHorizon, err := st.FinalHorizon(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	out.Comparison = Compare(CompareInput{
		Recomputed:      res.Totals,
		Rows:            rows,
		Range:           o.Range,
		Triggers:        o.Triggers,
		FinalHorizon:    horizon,
		HasHorizon:      hasHorizon,
		ToleranceMicros: o.ToleranceMicros,
	})

	// The diffs are recorded before the corrections, then again with their
	// revisions: a crash in between leaves diffs saying "not applied" next
	// to changelog rows that name this run, which a rerun (finding nothing)
	// makes plain, rather than corrections with no diff rows at all.
	if err := st.WriteDiffs(ctx, sinkDiffs(out.RunID, out.Diffs)); err != nil {
		return Outcome{}, fmt.Errorf("reconcile: %w", err)
	}
	if o.Apply {
		if out.Applied, err = apply(ctx, st, &out.Comparison, o.Triggers, out.RunID); err != nil {
			return Outcome{}, err
		}
		if out.Applied > 0 {
			if err := st.WriteDiffs(ctx, sinkDiffs(out.RunID, out.Diffs)); err != nil {
				return Outcome{}, fmt.Errorf("reconcile: %w", err)
			}
		}
	}
	out.Finished = time.Now().UTC()
	if o.Report != "" {
		if err := WriteReport(o.Report, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// checkSource lists the raw log's partitions, refusing a folder without any:
// reconciling against nothing would flag every row of an explicit range.
func checkSource(dir string) ([]string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--source %s: %w", dir, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--source %s: not a folder", dir)
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, fmt.Errorf("--source %s: %w", dir, err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("--source %s: no partitions (the folder holds no raw-log files)", dir)
	}
	return parts, nil
}

// OpenStore opens the sink a spec names for reconciling: a SQLite file or a
// BigQuery dataset. The SQLite file must exist: reconciling against a file
// that is not there is a typo, and opening would create an empty one.
func OpenStore(ctx context.Context, spec sinks.Spec) (Store, error) {
	if spec.Scheme != sinks.SchemeSQLite && spec.Scheme != sinks.SchemeBigQuery {
		return nil, fmt.Errorf("--sink %s: reconcile reads and corrects sqlite:PATH and bigquery:PROJECT.DATASET sinks only", spec)
	}
	r, ok, err := sinks.OpenReader(ctx, spec)
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

// streamFuture returns the positions the stream quarantined as
// future_event_time (see Stats.StreamFuture).
func streamFuture(ctx context.Context, st Store) ([]string, error) {
	q, err := st.Quarantined(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	var out []string
	for _, r := range q {
		if r.Reason == model.ReasonFutureEventTime {
			out = append(out, r.Position)
		}
	}
	return out, nil
}

// recompute builds and runs the batch pipeline and reads its result back.
func recompute(ctx context.Context, o Options, runID string, parts []string, set Settings,
	conflicts []model.Conflict, tooLate []model.TooLate) (Result, error) {
	dir := o.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "reconcile-")
		if err != nil {
			return Result{}, fmt.Errorf("reconcile: work dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// "/" also for gs:// paths, which filepath.Join would mangle.
	path := strings.TrimSuffix(dir, "/") + "/" + runID + "/recomputed.jsonl"

	p, s := beam.NewPipelineWithRoot()
	partitions := beam.CreateList(s, parts)
	evidence := StreamEvidence(s, conflicts, tooLate, set.shards())
	totals, stats, err := Recompute(s, partitions, evidence, set)
	if err != nil {
		return Result{}, err
	}
	WriteResult(s, totals, stats, path)
	start := time.Now()
	pipeline.UseSafePrismOptions()
	if err := beamx.Run(ctx, p); err != nil {
		return Result{}, fmt.Errorf("reconcile: pipeline: %w", err)
	}
	res, err := ReadResult(ctx, path)
	if err != nil {
		return Result{}, err
	}
	slog.Info("reconcile: recomputed", "records", res.Stats.Read, "ids", res.Stats.IDs,
		"keys", len(res.Totals), "took", time.Since(start).Round(time.Millisecond))
	return res, nil
}
