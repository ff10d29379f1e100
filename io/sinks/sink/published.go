package sink

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/revenue-stream/hourly/model"
)

// SeedBound limits the rows Published reads to the windows a run can still
// reach. The zero value reads every row (a run that may reach any window:
// a first replay, a restart that re-reads a partition from its start).
type SeedBound struct {
	// Bounded says that only windows starting at or after StartFrom are
	// needed: every earlier one is closed for every record of the run.
	Bounded bool
	// StartFrom is a window_start (epoch ms).
	StartFrom int64
}

// Needs reports whether a row of the window starting at windowStart is
// needed.
func (b SeedBound) Needs(windowStart int64) bool { return !b.Bounded || windowStart >= b.StartFrom }

// String renders the bound for logs.
func (b SeedBound) String() string {
	if !b.Bounded {
		return "every window"
	}
	return "windows from " + model.FormatTime(b.StartFrom)
}

// Published reads the current row of every key the sink holds that bound
// needs: what the revision step continues from after a restart or a second
// replay (revisions go on from the stored one, nothing dips, a window held
// as FINAL stays closed). The revision step calls it on a worker when it
// starts, so the sink's history never enters the job graph, whose size would
// otherwise grow with every key ever stored (Dataflow caps a job request at
// a few MB); with a bound, what each worker loads grows with the retention,
// not the history. A FINAL row is only a closed marker to that step, so it
// comes without its totals. The zero Spec, and a sink that keeps nothing to
// read back (console, a SQLite file or jsonl folder not created yet), give
// no rows; a reader that cannot filter by window (jsonl) is filtered here.
//
// The scheme's backend must be registered (Register): in a binary that does
// not import io/sinks, Published fails with an error that says so.
func Published(ctx context.Context, spec Spec, bound SeedBound) ([]model.Row, error) {
	if spec.Scheme == "" {
		return nil, nil
	}
	open, err := opener(spec.Scheme)
	if err != nil {
		return nil, err
	}
	db, ok, err := open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	if !ok {
		return nil, nil
	}
	defer func() {
		if err := db.Close(); err != nil {
			slog.Warn("sink: close after reading current rows", "sink", spec.String(), "err", err)
		}
	}()
	var rows []model.Row
	if r, ok := db.(RangeReader); ok && bound.Bounded {
		rows, err = r.CurrentRowsFrom(ctx, bound.StartFrom)
	} else {
		rows, err = db.CurrentRows(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("sink %s: read current rows: %w", spec, err)
	}
	out := rows[:0]
	for _, r := range rows {
		if !bound.Needs(r.WindowStart) {
			continue
		}
		if r.State == model.Final {
			// The marker: key, revision and state.
			r = model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
		}
		out = append(out, r)
	}
	return out, nil
}
