package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/revenue-stream/hourly/model"
)

// readTable reads rows of c's table through query, which selects the
// table's columns in order (or expressions of their types), and returns
// them as records. A row that cannot be read is skipped: the error is then
// UnreadableRows, returned with the rows read.
func readTable[T any](ctx context.Context, s *SQLite, c codec[T], what, query string, args ...any) ([]T, error) {
	return readTableFrom(ctx, s, c, nil, what, query, args...)
}

// readTableFrom is readTable for a join whose first columns come from the
// table from (named so in errors).
func readTableFrom[T any](ctx context.Context, s *SQLite, c codec[T], from *Table, what, query string, args ...any) ([]T, error) {
	var (
		out []T
		bad UnreadableRows
	)
	sc := newSQLiteScanner(c.t)
	sc.from = from
	err := s.query(ctx, what, query, func(rs *sql.Rows) error {
		vals, err := sc.scan(rs)
		if err == nil {
			var v T
			if v, err = c.get(vals); err == nil {
				out = append(out, v)
				return nil
			}
		}
		var re *RowError
		if !errors.As(err, &re) {
			return err
		}
		bad = append(bad, re.rowKey(sc.table(0), c.t, sc.texts))
		return nil
	}, args...)
	if err == nil && len(bad) > 0 {
		err = bad
	}
	return out, err
}

// CurrentRows returns the current snapshot of every key, ordered by
// window_start then dims, with the writer of the stored revision.
//
// A row that cannot be read is left out and named in an UnreadableRows
// error returned with the others.
func (s *SQLite) CurrentRows(ctx context.Context) ([]model.Row, error) {
	// The changelog's columns: hourly_revenue's, then when and by whom the
	// stored revision was written.
	rows, err := readTableFrom(ctx, s, changelogCodec, HourlyRevenue, "read hourly_revenue", `SELECT `+identList("h", HourlyRevenue.Names())+`,
		COALESCE(c.written_at, ''), COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision`)
	if _, ok := Unreadable(err); !ok {
		return nil, err
	}
	return sortedRows(snapshots(rows)), err
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms): the primary key's index on window_start serves
// the range, so a restarted job's seed (Published) reads what it can still
// reach, not the whole history.
func (s *SQLite) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	rows, err := readTableFrom(ctx, s, changelogCodec, HourlyRevenue, "read hourly_revenue", `SELECT `+identList("h", HourlyRevenue.Names())+`,
		COALESCE(c.written_at, ''), COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision
		WHERE h.window_start >= ?`, secondPrefix(windowStart))
	if err != nil {
		return nil, err
	}
	all := snapshots(rows)
	out := all[:0]
	for _, r := range all {
		if r.WindowStart >= windowStart { // the TEXT range is only a pre-filter
			out = append(out, r)
		}
	}
	return sortedRows(out), nil
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (s *SQLite) Changelog(ctx context.Context) ([]model.Row, error) {
	rows, err := readTable(ctx, s, changelogCodec, "read hourly_revenue_changelog", sqliteSelect(HourlyRevenueChangelog))
	if err != nil {
		return nil, err
	}
	return sortedRows(snapshots(rows)), nil
}

// ChangelogFrom is Changelog limited to windows starting at or after
// windowStart (epoch ms), read through the primary key's index on
// window_start (see CurrentRowsFrom for the TEXT pre-filter).
func (s *SQLite) ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	rows, err := readTable(ctx, s, changelogCodec, "read hourly_revenue_changelog",
		sqliteSelect(HourlyRevenueChangelog)+` WHERE window_start >= ?`, secondPrefix(windowStart))
	if err != nil {
		return nil, err
	}
	all := snapshots(rows)
	out := all[:0]
	for _, r := range all {
		if r.WindowStart >= windowStart {
			out = append(out, r)
		}
	}
	return sortedRows(out), nil
}

// KeyCount returns how many (window, dims) keys the sink holds.
func (s *SQLite) KeyCount(ctx context.Context) (n int64, err error) {
	err = s.query(ctx, "count hourly_revenue", `SELECT COUNT(*) FROM hourly_revenue`, func(rs *sql.Rows) error {
		return rs.Scan(&n)
	})
	return n, err
}

// snapshots drops written_at. Ordering happens in Go on the parsed times:
// TEXT order puts "10:00:00.500Z" before "10:00:00Z".
func snapshots(rows []changelogRow) []model.Row {
	out := make([]model.Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}

// TooLate returns the too_late_events rows ordered by source_position.
func (s *SQLite) TooLate(ctx context.Context) ([]model.TooLate, error) {
	return readAudit(ctx, s, tooLateCodec)
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (s *SQLite) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	return readAudit(ctx, s, conflictCodec)
}

// Quarantined returns the quarantined_events rows ordered by source_position.
// Detail is not stored (SPEC §5 has no column for it) and comes back empty.
func (s *SQLite) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	return readAudit(ctx, s, quarantinedCodec)
}

// readAudit reads an audit table ordered by source_position.
func readAudit[T any](ctx context.Context, s *SQLite, c codec[T]) ([]T, error) {
	return readTable(ctx, s, c, "read "+c.t.Name, sqliteSelect(c.t)+` ORDER BY source_position`)
}

// FinalHorizon returns the latest window_end (epoch ms) among FINAL rows: on
// restart every window ending at or before it may already be closed (SPEC §4,
// "windows that the sink already holds as FINAL are closed too"). ok is false
// when no row is FINAL yet.
func (s *SQLite) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	// MAX over TEXT would misorder millisecond bounds, so compare parsed times.
	err = s.query(ctx, "read final horizon", `SELECT DISTINCT window_end FROM hourly_revenue
		WHERE result_state = 'FINAL'`, func(rs *sql.Rows) error {
		var we string
		if err := rs.Scan(&we); err != nil {
			return err
		}
		ms, err := parseTime(we)
		if err != nil {
			return err
		}
		if !ok || ms > windowEndMs {
			windowEndMs, ok = ms, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return windowEndMs, ok, nil
}

// EarliestOpenWindow returns the earliest window_start (epoch ms) among
// rows not yet FINAL: every window starting before it that has rows is
// FINAL. ok is false when every row is FINAL (or there are none).
func (s *SQLite) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	// As in FinalHorizon, compare parsed times, not TEXT.
	err = s.query(ctx, "read earliest open window", `SELECT DISTINCT window_start FROM hourly_revenue
		WHERE result_state <> 'FINAL'`, func(rs *sql.Rows) error {
		var ws string
		if err := rs.Scan(&ws); err != nil {
			return err
		}
		ms, err := parseTime(ws)
		if err != nil {
			return err
		}
		if !ok || ms < windowStartMs {
			windowStartMs, ok = ms, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return windowStartMs, ok, nil
}

// query runs a read and calls scan for each row.
func (s *SQLite) query(ctx context.Context, what, query string, scan func(*sql.Rows) error, args ...any) error {
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	return nil
}
