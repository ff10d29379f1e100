package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Multi-row statements (prefix, tuples, suffix) save the per-call cost of
// database/sql, about a fifth of BenchmarkSQLiteWrite's time.
var (
	sqlGetRowsPrefix = `WITH k(window_start, dims) AS (VALUES `
	sqlGetRowsSuffix = `) SELECT h.window_start, h.dims, h.revision, h.result_state, h.event_count
		FROM k JOIN hourly_revenue AS h ON h.window_start = k.window_start AND h.dims = k.dims`
	sqlUpsertRowsPrefix      = sqliteInsertPrefix("INSERT", HourlyRevenue)
	sqlUpsertRowsSuffix      = sqliteUpsertSuffix(HourlyRevenue)
	sqlInsertChangelogPrefix = sqliteInsertPrefix("INSERT", HourlyRevenueChangelog)
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

func newBulk(tx *sql.Tx, prefix, suffix string, width int) *bulk {
	return &bulk{tx: tx, prefix: prefix, suffix: suffix, width: width}
}

func (b *bulk) text(tuples int) string {
	tuple := "(?" + strings.Repeat(", ?", b.width-1) + ")"
	return b.prefix + tuple + strings.Repeat(", "+tuple, tuples-1) + b.suffix
}

func (b *bulk) stmt(ctx context.Context, tuples int) (*sql.Stmt, bool, error) {
	perChunk := bulkArgs / b.width
	if tuples < perChunk {
		st, err := b.tx.PrepareContext(ctx, b.text(tuples))
		return st, true, err
	}
	if b.full == nil {
		st, err := b.tx.PrepareContext(ctx, b.text(perChunk))
		if err != nil {
			return nil, false, err
		}
		b.full = st
	}
	return b.full, false, nil
}

func (b *bulk) exec(ctx context.Context, args []any) (int64, error) {
	var changed int64
	perChunk := bulkArgs / b.width
	for len(args) > 0 {
		n := min(len(args)/b.width, perChunk)
		st, once, err := b.stmt(ctx, n)
		if err != nil {
			return changed, fmt.Errorf("prepare: %w", err)
		}
		res, err := st.ExecContext(ctx, args[:n*b.width]...)
		if once {
			st.Close()
		}
		if err != nil {
			return changed, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return changed, err
		}
		changed += k
		args = args[n*b.width:]
	}
	return changed, nil
}

func (b *bulk) query(ctx context.Context, args []any, scan func(*sql.Rows) error) error {
	perChunk := bulkArgs / b.width
	for len(args) > 0 {
		n := min(len(args)/b.width, perChunk)
		st, once, err := b.stmt(ctx, n)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		err = func() error {
			if once {
				defer st.Close()
			}
			rs, err := st.QueryContext(ctx, args[:n*b.width]...)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				if err := scan(rs); err != nil {
					return err
				}
			}
			return rs.Err()
		}()
		if err != nil {
			return err
		}
		args = args[n*b.width:]
	}
	return nil
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
	if err := validateBatch(b); err != nil {
		return sink.Result{}, fmt.Errorf("sqlite sink %s: %w", s.path, err)
	}
	var lookup []any
	rows := sortedRows(b.Rows)
	for i, r := range rows {
		if i == 0 || !sameKey(r, rows[i-1]) {
			lookup = append(lookup, model.FormatTime(r.WindowStart), r.Dims)
		}
	}
	var (
		res     sink.Result
		refused refusals
	)
	err := s.inTx(ctx, "write", func(tx *sql.Tx) error {
		res, refused = sink.Result{}, refusals{}
		now := time.Now()

		current := make(map[rowKey]stored, len(lookup)/2)
		get := newBulk(tx, sqlGetRowsPrefix, sqlGetRowsSuffix, 2)
		defer get.close()
		err := get.query(ctx, lookup, func(rs *sql.Rows) error {
			var (
				k             rowKey
				st            stored
				start, state  string
				err, stateErr error
			)
			if err := rs.Scan(&start, &k.dims, &st.revision, &state, &st.count); err != nil {
				return err
			}
			k.windowStart, err = parseTime(start)
			if st.state, stateErr = model.ParseResultState(state); errors.Join(err, stateErr) != nil {
				return fmt.Errorf("%s %s: %w", start, k.dims, errors.Join(err, stateErr))
			}
			current[k] = st
			return nil
		})
		if err != nil {
			return fmt.Errorf("read stored rows: %w", err)
		}

		accepted, _ := refused.admitAll(rows, current)
		var upserts, changes, vals []any
		for i, r := range accepted {
			vals = changelogCodec.put(vals[:0], sink.ChangelogEntry{Row: r, WrittenAt: now})
			changes = sqliteArgs(HourlyRevenueChangelog, changes, vals)
			if i+1 == len(accepted) || !sameKey(accepted[i+1], r) { // the key's last accepted row
				upserts = sqliteArgs(HourlyRevenue, upserts, currentCodec.put(vals[:0], r))
			}
		}
		res.Accepted, res.Stale = len(accepted), refused.stale

		upsert := newBulk(tx, sqlUpsertRowsPrefix, sqlUpsertRowsSuffix, len(HourlyRevenue.Columns))
		defer upsert.close()
		if _, err := upsert.exec(ctx, upserts); err != nil {
			return fmt.Errorf("upsert hourly_revenue: %w", err)
		}
		changelog := newBulk(tx, sqlInsertChangelogPrefix, "", len(HourlyRevenueChangelog.Columns))
		defer changelog.close()
		if _, err := changelog.exec(ctx, changes); err != nil {
			return fmt.Errorf("insert hourly_revenue_changelog: %w", err)
		}
		if res.AuditInserted, err = writeAudit(ctx, tx, b); err != nil {
			return err
		}
		return writeProgress(ctx, tx, b.Progress, now)
	})
	if err != nil {
		return sink.Result{}, err
	}
	refused.warn("sqlite sink", "path", s.path)
	if res.Stale > refused.regressions {
		slog.Debug("sqlite sink: stale revisions ignored", "path", s.path, "rows", res.Stale-refused.regressions)
	}
	return res, nil
}

// writeAudit inserts audit rows once per position (INSERT OR IGNORE) and
// counts the rows added.
func writeAudit(ctx context.Context, tx *sql.Tx, b sink.Batch) (int, error) {
	n1, err1 := insertRows(ctx, tx, "INSERT OR IGNORE", tooLateCodec, b.TooLate)
	n2, err2 := insertRows(ctx, tx, "INSERT OR IGNORE", conflictCodec, b.Conflicts)
	n3, err3 := insertRows(ctx, tx, "INSERT OR IGNORE", quarantinedCodec, b.Quarantined)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, err
	}
	return int(n1 + n2 + n3), nil
}

func insertRows[T any](ctx context.Context, tx *sql.Tx, verb string, c codec[T], recs []T) (int64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	width := len(c.t.Columns)
	args := make([]any, 0, width*len(recs))
	var vals []any
	for _, r := range recs {
		vals = c.put(vals[:0], r)
		args = sqliteArgs(c.t, args, vals)
	}
	ins := newBulk(tx, sqliteInsertPrefix(verb, c.t), "", width)
	defer ins.close()
	n, err := ins.exec(ctx, args)
	if err != nil {
		return 0, fmt.Errorf("insert %s: %w", c.t.Name, err)
	}
	return n, nil
}

// writeProgress stores checkpoints; a retried one replaces only updated_at.
func writeProgress(ctx context.Context, tx *sql.Tx, progress []model.Checkpoint, now time.Time) error {
	rows := make([]checkpointRow, len(progress))
	for i, c := range progress {
		rows[i] = checkpointRow{Checkpoint: c, At: now}
	}
	_, err := insertRows(ctx, tx, "INSERT OR REPLACE", checkpointCodec, rows)
	return err
}
