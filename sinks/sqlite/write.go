package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Multi-row statements (prefix, tuples, suffix) save the per-call cost of
// database/sql, about a fifth of BenchmarkSQLiteWrite's time.
var (
	sqlGetRowsPrefix = `WITH k(window_start, dims) AS (VALUES `
	sqlGetRowsSuffix = `) SELECT ` + identList("h", sqlread.StoredCodec.Table.Names()) + `
		FROM k JOIN hourly_revenue AS h ON h.window_start = k.window_start AND h.dims = k.dims`
	sqlUpsertRowsSuffix = sqliteUpsertSuffix(table.HourlyRevenue)
)

// bulkArgs bounds one statement's parameters, well under SQLite's 32766.
const bulkArgs = 960

// bulk runs a multi-row statement over flattened args in chunks; the
// full-size one is prepared once per transaction.
type bulk struct {
	tx             *sql.Tx
	prefix, suffix string
	width          int // parameters per tuple
	full           *sql.Stmt
}

func (b *bulk) text(tuples int) string {
	tuple := "(?" + strings.Repeat(", ?", b.width-1) + ")"
	return b.prefix + tuple + strings.Repeat(", "+tuple, tuples-1) + b.suffix
}

// each runs the statement over args chunk by chunk: run gets each chunk's
// statement and arguments.
func (b *bulk) each(ctx context.Context, args []any, run func(st *sql.Stmt, args []any) error) error {
	perChunk := bulkArgs / b.width
	for chunk := range slices.Chunk(args, perChunk*b.width) {
		n, st := len(chunk)/b.width, b.full
		if st == nil || n < perChunk {
			var err error
			if st, err = b.tx.PrepareContext(ctx, b.text(n)); err != nil {
				return fmt.Errorf("prepare: %w", err)
			}
			if n == perChunk {
				b.full = st
			}
		}
		err := run(st, chunk)
		if st != b.full {
			st.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *bulk) exec(ctx context.Context, args []any) (changed int64, err error) {
	err = b.each(ctx, args, func(st *sql.Stmt, args []any) error {
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		changed += k
		return err
	})
	return changed, err
}

// query reads rows of t's columns (scanAll).
func (b *bulk) query(ctx context.Context, args []any, t *table.Table, each func([]any) error) error {
	return b.each(ctx, args, func(st *sql.Stmt, args []any) error {
		rs, err := st.QueryContext(ctx, args...)
		return scanAll(t, rs, err, each, nil)
	})
}

func (b *bulk) close() {
	if b.full != nil {
		b.full.Close()
	}
}

// Write applies a batch in one transaction, so output and progress never
// disagree after a crash: it reads the stored row of each key, admits rows in
// key and revision order, upserts each key's last accepted row, appends every
// accepted one to the changelog, and inserts audit rows once per position.
func (s *SQLite) Write(ctx context.Context, b sink.Batch) (sink.Result, error) {
	if err := b.Validate(); err != nil {
		return sink.Result{}, fmt.Errorf("sqlite sink %s: %w", s.path, err)
	}
	var lookup []any
	rows := rules.SortedRows(b.Rows)
	for i, r := range rows {
		if i == 0 || !rules.SameKey(r, rows[i-1]) {
			lookup = append(lookup, model.FormatTime(r.WindowStart), r.Dims)
		}
	}
	var (
		res     sink.Result
		refused rules.Refusals
	)
	err := s.inTx(ctx, "write", func(tx *sql.Tx) error {
		res, refused = sink.Result{}, rules.Refusals{}
		now := time.Now()

		current := make(map[rules.Key]rules.Stored, len(lookup)/2)
		get := &bulk{tx: tx, prefix: sqlGetRowsPrefix, suffix: sqlGetRowsSuffix, width: 2}
		defer get.close()
		err := get.query(ctx, lookup, sqlread.StoredCodec.Table, sqlread.StoredCodec.Each(func(r sqlread.StoredRow) { current[r.Key] = r.Stored }))
		if err != nil {
			return fmt.Errorf("read stored rows: %w", err)
		}

		accepted, _ := refused.AdmitAll(rows, current)
		last := rules.LastPerKey(accepted, func(r model.Row) model.Row { return r })
		res.Accepted, res.Stale = len(accepted), refused.Stale
		if _, err := insertRows(ctx, tx, "INSERT", sqlUpsertRowsSuffix, table.CurrentCodec, last); err != nil {
			return err
		}
		changes := slicesx.Map(accepted, func(r model.Row) sink.ChangelogEntry { return sink.ChangelogEntry{Row: r, WrittenAt: now} })
		if _, err := insertRows(ctx, tx, "INSERT", "", table.ChangelogCodec, changes); err != nil {
			return err
		}
		// Audit rows once per position (INSERT OR IGNORE), counting those added.
		n1, err1 := insertRows(ctx, tx, "INSERT OR IGNORE", "", table.TooLateCodec, b.TooLate)
		n2, err2 := insertRows(ctx, tx, "INSERT OR IGNORE", "", table.ConflictCodec, b.Conflicts)
		n3, err3 := insertRows(ctx, tx, "INSERT OR IGNORE", "", table.QuarantinedCodec, b.Quarantined)
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		res.AuditInserted = int(n1 + n2 + n3)
		// A retried checkpoint replaces only updated_at.
		_, err = insertRows(ctx, tx, "INSERT OR REPLACE", "", table.CheckpointCodec, table.CheckpointRows(b.Progress, now))
		return err
	})
	if err != nil {
		return sink.Result{}, err
	}
	refused.Warn("sqlite sink", "path", s.path)
	if res.Stale > refused.Regressions {
		slog.Debug("sqlite sink: stale revisions ignored", "path", s.path, "rows", res.Stale-refused.Regressions)
	}
	return res, nil
}

// insertRows inserts recs into c's table in multi-row statements, each ended
// by suffix, and returns the rows changed.
func insertRows[T any](ctx context.Context, tx *sql.Tx, verb, suffix string, c table.Codec[T], recs []T) (int64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	width := len(c.Table.Columns)
	ins := &bulk{tx: tx, prefix: sqliteInsertPrefix(verb, c.Table), suffix: suffix, width: width}
	defer ins.close()
	n, err := ins.exec(ctx, sqliteArgs(c, make([]any, 0, width*len(recs)), recs...))
	if err != nil {
		return 0, fmt.Errorf("insert %s: %w", c.Table.Name, err)
	}
	return n, nil
}

// CheckRunConfig refuses a run whose settings differ from those the rows
// were computed with (its keys would collide), and stores keys not yet stored.
func (s *SQLite) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	var mismatch error
	err := s.inTx(ctx, "check run_config", func(tx *sql.Tx) error {
		mismatch = nil
		var stored []table.ConfigEntry
		rs, err := tx.QueryContext(ctx, `SELECT key, value FROM run_config`)
		if err := scanAll(table.RunConfig, rs, err, table.ConfigCodec.Each(func(e table.ConfigEntry) { stored = append(stored, e) }), nil); err != nil {
			return fmt.Errorf("read run_config: %w", err)
		}
		have := table.ConfigMap(stored)
		added, err := rules.CompareRunConfig(s.path, have, cfg)
		if err != nil {
			mismatch = err
			return nil // nothing to write; commit the empty transaction
		}
		_, err = insertRows(ctx, tx, "INSERT", "", table.ConfigCodec, table.ConfigEntries(cfg, added))
		return err
	})
	if err != nil {
		return err
	}
	return mismatch
}

// WriteDiffs stores reconcile diffs in one transaction, replacing a row with
// the same (run_id, window_start, dims) so a retried run stays idempotent.
func (s *SQLite) WriteDiffs(ctx context.Context, diffs []sink.Diff) error {
	if len(diffs) == 0 {
		return nil
	}
	return s.inTx(ctx, "write reconcile_diffs", func(tx *sql.Tx) error {
		ins := &bulk{tx: tx, prefix: sqliteInsertPrefix("INSERT", table.ReconcileDiffs),
			suffix: sqliteUpsertSuffix(table.ReconcileDiffs), width: len(table.ReconcileDiffs.Columns)}
		defer ins.close()
		for _, d := range diffs {
			// One statement per diff, so an error names the diff.
			if _, err := ins.exec(ctx, sqliteArgs(table.DiffCodec, nil, d)); err != nil {
				return fmt.Errorf("upsert diff %s %s %s: %w", d.RunID, model.FormatTime(d.WindowStart), d.Dims, err)
			}
		}
		return nil
	})
}
