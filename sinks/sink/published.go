package sink

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/revenue-stream/hourly/model"
)

// SeedBound limits the rows Published reads to the windows a run can still
// reach: with Bounded, those starting at or after StartFrom (epoch ms); the
// zero value reads every row.
type SeedBound struct {
	Bounded   bool
	StartFrom int64
}

// Needs reports whether the window starting at windowStart is needed.
func (b SeedBound) Needs(windowStart int64) bool { return !b.Bounded || windowStart >= b.StartFrom }

func (b SeedBound) String() string {
	if !b.Bounded {
		return "every window"
	}
	return "windows from " + model.FormatTime(b.StartFrom)
}

// Published reads the current row of every key bound needs, what a restarted
// revision step continues from, on a worker (Dataflow caps a job request at a
// few MB). A FINAL row comes as a closed marker without totals; the zero Spec
// and a sink with nothing to read give none. The scheme must be registered.
func Published(ctx context.Context, spec Spec, bound SeedBound) ([]model.Row, error) {
	if spec.Scheme == "" {
		return nil, nil
	}
	if _, err := Lookup(spec.Scheme); err != nil {
		return nil, err
	}
	db, ok, err := OpenReader(ctx, spec)
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
	q := Query{Current: true}
	if bound.Bounded {
		q.From = &bound.StartFrom
	}
	rows, err := Rows(db.Changelog(ctx, q))
	if err != nil {
		return nil, fmt.Errorf("sink %s: read current rows: %w", spec, err)
	}
	rows = slices.DeleteFunc(rows, func(r model.Row) bool { return !bound.Needs(r.WindowStart) })
	for i, r := range rows {
		if r.State == model.Final {
			// The marker: key, revision and state.
			rows[i] = model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
		}
	}
	return rows, nil
}
