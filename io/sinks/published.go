package sinks

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
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

// currentRowsFrom is implemented by readers that can filter by window_start
// where they read (an index, a partition filter) rather than in Go.
type currentRowsFrom interface {
	CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
}

// Published reads the current row of every key the sink holds that bound
// needs: what the revision step continues from after a restart or a second
// replay (revisions go on from the stored one, nothing dips, a window held
// as FINAL stays closed). The revision step calls it on a worker when it
// starts, so the sink's history never enters the job graph, whose size would
// otherwise grow with every key ever stored (Dataflow caps a job request at
// a few MB); with a bound, what each worker loads grows with the retention,
// not the history. A FINAL row is only a closed marker to that step, so it
// comes without its totals. A sink that keeps nothing to read back (console,
// a SQLite file or jsonl folder not created yet) gives no rows; a jsonl
// folder is read whole and filtered here.
func Published(ctx context.Context, spec Spec, bound SeedBound) ([]model.Row, error) {
	db, ok, err := OpenReader(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	if !ok {
		return nil, nil
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Warnf(ctx, "sink %s: close after reading current rows: %v", spec, err)
		}
	}()
	var rows []model.Row
	if r, ok := db.(currentRowsFrom); ok && bound.Bounded {
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

// secondPrefix is the text every RFC 3339 rendering (model.FormatTime) of
// an instant at or after ms's whole second starts with or sorts after, and
// every earlier one sorts before: "2026-11-04T10:00:00". Comparing the
// full renderings would misorder "10:00:00.500Z" before "10:00:00Z", so a
// TEXT range on it is a safe pre-filter, and the exact one is done on the
// parsed times.
func secondPrefix(ms int64) string {
	s := model.FormatTime(ms - ((ms%1000)+1000)%1000)
	return strings.TrimSuffix(s, "Z")
}
