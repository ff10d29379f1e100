package reconcile

import (
	"context"
	"fmt"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/bigquery"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/triggers"
)

// Store is what the driver needs of a versioned sink (*sqlite.SQLite, *bigquery.BigQuery): run_config,
// the audit tables, the versioned Write and reconcile_diffs. Current rows are read by
// CompareWithSink.
type Store interface {
	sink.Sink
	sink.ConfigChecker
	Conflicts(ctx context.Context) ([]model.Conflict, error)
	TooLate(ctx context.Context) ([]model.TooLate, error)
	Quarantined(ctx context.Context) ([]model.Quarantined, error)
	WriteDiffs(ctx context.Context, diffs []sink.Diff) error
}

var (
	_ Store = (*sqlite.SQLite)(nil)
	_ Store = (*bigquery.BigQuery)(nil)
)

// Writer is the changelog writer of a run's corrections.
func Writer(runID string) string { return "reconcile:" + runID }

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

// apply writes the corrections in one batch and records their revisions; a refusal fails the run.
func apply(ctx context.Context, st Store, c *Comparison, p triggers.Policy, runID string) (int, error) {
	rows := Corrections(c.Diffs, p, runID)
	if len(rows) == 0 {
		return 0, nil
	}
	res, err := st.Write(ctx, sink.Batch{Rows: rows})
	if err != nil {
		return 0, fmt.Errorf("reconcile: apply %d corrections: %w", len(rows), err)
	}
	if res.Accepted != len(rows) {
		return res.Accepted, fmt.Errorf("reconcile: apply: the sink accepted %d of %d corrections: another writer changed those keys during the run; run reconcile again",
			res.Accepted, len(rows))
	}
	for i := range c.Diffs {
		if d := &c.Diffs[i]; d.Applicable() {
			d.AppliedRevision = d.Streamed.Revision + 1
		}
	}
	return len(rows), nil
}

// sinkDiffs converts diffs to reconcile_diffs rows.
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
