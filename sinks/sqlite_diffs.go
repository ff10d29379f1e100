package sinks

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// WriteDiffs stores reconcile diffs in one transaction, replacing a row with
// the same (run_id, window_start, dims) so a retried run stays idempotent.
func (s *SQLite) WriteDiffs(ctx context.Context, diffs []sink.Diff) error {
	if len(diffs) == 0 {
		return nil
	}
	return s.inTx(ctx, "write reconcile_diffs", func(tx *sql.Tx) error {
		ins := newBulk(tx, sqliteInsertPrefix("INSERT", ReconcileDiffs), sqliteUpsertSuffix(ReconcileDiffs), len(ReconcileDiffs.Columns))
		defer ins.close()
		var args, vals []any
		for _, d := range diffs {
			vals = diffCodec.put(vals[:0], d)
			args = sqliteArgs(ReconcileDiffs, args, vals)
			// One statement per diff, so an error names the diff.
			if _, err := ins.exec(ctx, args); err != nil {
				return fmt.Errorf("upsert diff %s %s %s: %w", d.RunID, model.FormatTime(d.WindowStart), d.Dims, err)
			}
			args = args[:0]
		}
		return nil
	})
}
