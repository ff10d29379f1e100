package sinks

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/revenue-stream/hourly/model"
)

// Published reads the current row of every key the sink holds: what the
// revision step continues from after a restart or a second replay
// (revisions go on from the stored one, nothing dips, a window held as FINAL
// stays closed). The revision step calls it on a worker when it starts, so
// the sink's history never enters the job graph, whose size would otherwise
// grow with every key ever stored (Dataflow caps a job request at a few
// MB). A FINAL row is only a closed marker to that step, so it comes without
// its totals. A sink that keeps nothing to read back (console, jsonl, a
// SQLite file not created yet) gives no rows.
func Published(ctx context.Context, spec Spec) ([]model.Row, error) {
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
	rows, err := db.CurrentRows(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: read current rows: %w", spec, err)
	}
	for i, r := range rows {
		if r.State == model.Final {
			// The marker: key, revision and state.
			rows[i] = model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
		}
	}
	return rows, nil
}
