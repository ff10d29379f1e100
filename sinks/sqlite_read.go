package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// readTable reads records of c's table through query, which selects its
// columns in order. Rows that cannot be read are skipped and named in an
// UnreadableRows error returned with the others.
func readTable[T any](ctx context.Context, s *SQLite, c codec[T], what, query string, args ...any) ([]T, error) {
	return readTableFrom(ctx, s, c, nil, what, query, args...)
}

// readTableFrom is readTable for a join whose first columns come from from.
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
// window_start then dims, with the writer of the stored revision. A row that
// cannot be read is left out and named in an UnreadableRows error.
func (s *SQLite) CurrentRows(ctx context.Context) ([]model.Row, error) {
	rows, err := s.readCurrent(ctx, nil)
	if _, ok := Unreadable(err); !ok {
		return nil, err
	}
	return sortedRows(snapshots(rows)), err
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms), read through the primary key's index.
func (s *SQLite) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(s.readCurrent(ctx, &windowStart))
}

// readCurrent reads hourly_revenue joined with the written_at and writer of
// each stored revision, from *from on when from is set.
func (s *SQLite) readCurrent(ctx context.Context, from *int64) ([]ChangelogEntry, error) {
	q := `SELECT ` + identList("h", HourlyRevenue.Names()) + `, COALESCE(c.written_at, ''), COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision`
	var args []any
	if from != nil {
		q, args = q+` WHERE h.window_start >= ?`, []any{secondPrefix(*from)}
	}
	rows, err := readTableFrom(ctx, s, changelogCodec, HourlyRevenue, "read hourly_revenue", q, args...)
	return since(rows, from), err
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (s *SQLite) Changelog(ctx context.Context) ([]model.Row, error) {
	return rowsOf(s.readChangelog(ctx, nil))
}

// ChangelogFrom is Changelog limited to windows starting at or after
// windowStart (epoch ms), read through the primary key's index.
func (s *SQLite) ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(s.readChangelog(ctx, &windowStart))
}

// ChangelogEntry is an accepted snapshot with when the sink accepted it:
// a row of hourly_revenue_changelog. WrittenAt is the zero time where the
// sink keeps none.
type ChangelogEntry struct {
	model.Row
	WrittenAt time.Time
}

// ChangelogEntries is Changelog with each snapshot's written_at.
func (s *SQLite) ChangelogEntries(ctx context.Context) ([]ChangelogEntry, error) {
	return entriesOf(s.readChangelog(ctx, nil))
}

// ChangelogEntriesFrom is ChangelogFrom with each snapshot's written_at.
func (s *SQLite) ChangelogEntriesFrom(ctx context.Context, windowStart int64) ([]ChangelogEntry, error) {
	return entriesOf(s.readChangelog(ctx, &windowStart))
}

// readChangelog reads the changelog, from *from on when from is set.
func (s *SQLite) readChangelog(ctx context.Context, from *int64) ([]ChangelogEntry, error) {
	q, args := sqliteSelect(HourlyRevenueChangelog), []any(nil)
	if from != nil {
		q, args = q+` WHERE window_start >= ?`, []any{secondPrefix(*from)}
	}
	rows, err := readTable(ctx, s, changelogCodec, "read hourly_revenue_changelog", q, args...)
	return since(rows, from), err
}

// since keeps the rows of windows starting at or after *from (all when from
// is nil): a TEXT range on window_start is only a pre-filter (secondPrefix).
func since(rows []ChangelogEntry, from *int64) []ChangelogEntry {
	if from == nil {
		return rows
	}
	return slices.DeleteFunc(rows, func(r ChangelogEntry) bool { return r.WindowStart < *from })
}

// rowsOf orders a read's rows by key then revision, dropping written_at.
func rowsOf(rows []ChangelogEntry, err error) ([]model.Row, error) {
	if err != nil {
		return nil, err
	}
	return sortedRows(snapshots(rows)), nil
}

// entriesOf orders a read's rows by key then revision.
func entriesOf(rows []ChangelogEntry, err error) ([]ChangelogEntry, error) {
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b ChangelogEntry) int { return model.CompareRows(a.Row, b.Row) })
	return rows, nil
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
func snapshots(rows []ChangelogEntry) []model.Row {
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

// LatestTooLate returns the n too_late_events rows that arrived last, newest
// first (latestSQL), cut where they are stored for app/live's refresh.
func (s *SQLite) LatestTooLate(ctx context.Context, n int) ([]model.TooLate, error) {
	return readLatestAudit(ctx, s, tooLateCodec, n)
}

// LatestConflicts is LatestTooLate for conflict_events.
func (s *SQLite) LatestConflicts(ctx context.Context, n int) ([]model.Conflict, error) {
	return readLatestAudit(ctx, s, conflictCodec, n)
}

// LatestQuarantined is LatestTooLate for quarantined_events.
func (s *SQLite) LatestQuarantined(ctx context.Context, n int) ([]model.Quarantined, error) {
	return readLatestAudit(ctx, s, quarantinedCodec, n)
}

func readLatestAudit[T any](ctx context.Context, s *SQLite, c codec[T], n int) ([]T, error) {
	if n <= 0 {
		return nil, nil
	}
	cols := identList("", c.t.Names())
	return readTable(ctx, s, c, "read latest "+c.t.Name, latestSQL(sqliteDialect, cols, ident(c.t.Name), n))
}

// AuditCounts is how many rows each audit table holds.
type AuditCounts struct {
	TooLate, Conflicts, Quarantined int64
}

// AuditCounts counts the audit tables' rows in one statement.
func (s *SQLite) AuditCounts(ctx context.Context) (c AuditCounts, err error) {
	err = s.query(ctx, "count the audit tables", `SELECT (SELECT COUNT(*) FROM `+ident(TooLateEvents.Name)+`),
		(SELECT COUNT(*) FROM `+ident(ConflictEvents.Name)+`), (SELECT COUNT(*) FROM `+ident(QuarantinedEvents.Name)+`)`,
		func(rs *sql.Rows) error { return rs.Scan(&c.TooLate, &c.Conflicts, &c.Quarantined) })
	return c, err
}

// sqlDialect is what differs between SQLite and BigQuery in latestSQL: the
// substring position function and a digits-to-integer cast (0 when empty).
type sqlDialect struct {
	strpos string
	toInt  func(expr string) string
}

var sqliteDialect = sqlDialect{strpos: "INSTR", toInt: func(e string) string { return "CAST(" + e + " AS INTEGER)" }}

// latestSQL selects cols of the n rows of from that arrived last, newest
// first, by source_position in app/live's CompareArrival order (the tables
// keep no write time), split as rawlog.ParsePosition does. ABS keeps SUBSTR
// lengths non-negative, which BigQuery requires even in a branch not taken.
func latestSQL(d sqlDialect, cols, from string, n int) string {
	named := rawlog.NamedPartition + ":"
	file := `CASE WHEN NOT (SUBSTR(source_position, 1, ` + strconv.Itoa(len(named)) + `) = '` + named + `' AND LENGTH(source_position) > ` + strconv.Itoa(len(named)) + `)
	AND SUBSTR(arr_rest, -1) = ':' AND LENGTH(arr_rest) >= 2 AND arr_line >= 1
	AND (arr_slash = 0 OR (arr_slash > 1 AND arr_slash < LENGTH(arr_path))) THEN 1 ELSE 0 END`
	return `SELECT ` + cols + ` FROM (
SELECT ` + cols + `, ` + file + ` AS arr_file,
	CASE WHEN arr_slash > 0 THEN SUBSTR(arr_path, arr_slash + 1) ELSE arr_path END AS arr_name, arr_line,
	CASE WHEN arr_slash > 0 THEN SUBSTR(arr_path, 1, ABS(arr_slash - 1)) ELSE '` + rawlog.RootPartition + `' END AS arr_partition
FROM (SELECT ` + cols + `, arr_rest, arr_path, arr_line, ` + d.strpos + `(arr_path, '/') AS arr_slash
FROM (SELECT ` + cols + `, arr_rest, SUBSTR(arr_rest, 1, ABS(LENGTH(arr_rest) - 1)) AS arr_path,
	` + d.toInt(`SUBSTR(source_position, LENGTH(arr_rest) + 1)`) + ` AS arr_line
FROM (SELECT ` + cols + `, RTRIM(source_position, '0123456789') AS arr_rest FROM ` + from + `))))
ORDER BY arr_file DESC, CASE WHEN arr_file = 1 THEN arr_name ELSE '' END DESC, CASE WHEN arr_file = 1 THEN arr_line ELSE 0 END DESC,
	CASE WHEN arr_file = 1 THEN arr_partition ELSE '' END DESC, source_position DESC
LIMIT ` + strconv.Itoa(n)
}

// FinalHorizon returns the latest window_end (epoch ms) among FINAL rows: on
// restart every window ending at or before it may already be closed (SPEC §4).
// ok is false when no row is FINAL yet.
func (s *SQLite) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	return s.extremeTime(ctx, "read final horizon", `SELECT DISTINCT window_end FROM hourly_revenue
		WHERE result_state = 'FINAL'`, true)
}

// EarliestOpenWindow returns the earliest window_start (epoch ms) among rows
// not yet FINAL. ok is false when every row is FINAL (or there are none).
func (s *SQLite) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	return s.extremeTime(ctx, "read earliest open window", `SELECT DISTINCT window_start FROM hourly_revenue
		WHERE result_state <> 'FINAL'`, false)
}

// extremeTime returns the latest (or earliest) time a query of one TEXT time
// column selects. MIN and MAX over TEXT would misorder millisecond bounds, so
// it compares parsed times.
func (s *SQLite) extremeTime(ctx context.Context, what, query string, latest bool) (ms int64, ok bool, err error) {
	err = s.query(ctx, what, query, func(rs *sql.Rows) error {
		var text string
		if err := rs.Scan(&text); err != nil {
			return err
		}
		t, err := parseTime(text)
		if err != nil {
			return err
		}
		if !ok || latest && t > ms || !latest && t < ms {
			ms, ok = t, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return ms, ok, nil
}

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
