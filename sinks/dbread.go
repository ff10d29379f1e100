package sinks

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// database is what the SQL sinks (SQLite, BigQuery) answer alike; dbReader
// builds the rest of Reader on it.
type database interface {
	// rows runs query, which selects t's columns in order, and calls each
	// with every row's values. A *RowError skips the row where the backend
	// can go on (SQLite names them in an UnreadableRows error).
	rows(ctx context.Context, what string, t *Table, query string, args []any, each func([]any) error) error
	// from is what t's rows are selected from: one row per key, where rows
	// are appended (BigQuery).
	from(t *Table) string
	// changelog reads the changelog, or with current the current rows, of
	// windows starting at or after *start when start is set.
	changelog(ctx context.Context, current bool, start *int64) ([]sink.ChangelogEntry, error)
	dialect() sqlDialect
}

// dbReader is the part of Reader SQLite and BigQuery share.
type dbReader struct{ db database }

// readTable reads records of c's table through query.
func readTable[T any](ctx context.Context, db database, c codec[T], what, query string, args ...any) ([]T, error) {
	var out []T
	err := db.rows(ctx, what, c.t, query, args, func(vals []any) error {
		v, err := c.get(vals)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// CurrentRows returns the current snapshot of every key, ordered by
// window_start then dims, with the writer of the stored revision. A row that
// cannot be read is left out and named in an UnreadableRows error.
func (r dbReader) CurrentRows(ctx context.Context) ([]model.Row, error) {
	rows, err := r.db.changelog(ctx, true, nil)
	if _, ok := sink.Unreadable(err); !ok {
		return nil, err
	}
	return sortedRows(snapshots(rows)), err
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms), filtered where the rows are stored.
func (r dbReader) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(r.db.changelog(ctx, true, &windowStart))
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (r dbReader) Changelog(ctx context.Context) ([]model.Row, error) {
	return rowsOf(r.db.changelog(ctx, false, nil))
}

// ChangelogFrom is Changelog limited to windows starting at or after
// windowStart (epoch ms), filtered where the rows are stored.
func (r dbReader) ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(r.db.changelog(ctx, false, &windowStart))
}

// ChangelogEntries is Changelog with each snapshot's written_at.
func (r dbReader) ChangelogEntries(ctx context.Context) ([]sink.ChangelogEntry, error) {
	return entriesOf(r.db.changelog(ctx, false, nil))
}

// ChangelogEntriesFrom is ChangelogFrom with each snapshot's written_at.
func (r dbReader) ChangelogEntriesFrom(ctx context.Context, windowStart int64) ([]sink.ChangelogEntry, error) {
	return entriesOf(r.db.changelog(ctx, false, &windowStart))
}

// TooLate returns the too_late_events rows ordered by source_position.
func (r dbReader) TooLate(ctx context.Context) ([]model.TooLate, error) {
	return readAudit(ctx, r.db, tooLateCodec, all)
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (r dbReader) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	return readAudit(ctx, r.db, conflictCodec, all)
}

// Quarantined returns the quarantined_events rows ordered by source_position.
// Detail is not stored (SPEC §5 has no column for it) and comes back empty.
func (r dbReader) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	return readAudit(ctx, r.db, quarantinedCodec, all)
}

// LatestTooLate returns the n too_late_events rows that arrived last, newest
// first (latestSQL), cut where they are stored for app/live's refresh.
func (r dbReader) LatestTooLate(ctx context.Context, n int) ([]model.TooLate, error) {
	return readAudit(ctx, r.db, tooLateCodec, max(n, 0))
}

// LatestConflicts is LatestTooLate for conflict_events.
func (r dbReader) LatestConflicts(ctx context.Context, n int) ([]model.Conflict, error) {
	return readAudit(ctx, r.db, conflictCodec, max(n, 0))
}

// LatestQuarantined is LatestTooLate for quarantined_events.
func (r dbReader) LatestQuarantined(ctx context.Context, n int) ([]model.Quarantined, error) {
	return readAudit(ctx, r.db, quarantinedCodec, max(n, 0))
}

// all asks readAudit for every row.
const all = -1

// readAudit reads an audit table ordered by source_position, or the latest
// rows (latestSQL) when latest is not all.
func readAudit[T any](ctx context.Context, db database, c codec[T], latest int) ([]T, error) {
	d := db.dialect()
	cols, from := d.columns(c.t.Names()), db.from(c.t)
	switch latest {
	case all:
		return readTable(ctx, db, c, "read "+c.t.Name, `SELECT `+cols+` FROM `+from+` ORDER BY source_position`)
	case 0:
		return nil, nil
	}
	return readTable(ctx, db, c, "read latest "+c.t.Name, latestSQL(d, cols, from, latest))
}

// RunConfig returns the stored run settings.
func (r dbReader) RunConfig(ctx context.Context) (map[string]string, error) {
	rows, err := readTable(ctx, r.db, configCodec, "read "+RunConfig.Name, r.selectAll(RunConfig))
	if err != nil {
		return nil, err
	}
	return configMap(rows), nil
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (r dbReader) Diffs(ctx context.Context) ([]sink.Diff, error) {
	out, err := readTable(ctx, r.db, diffCodec, "read "+ReconcileDiffs.Name, r.selectAll(ReconcileDiffs))
	if err != nil {
		return nil, err
	}
	sortDiffs(out)
	return out, nil
}

func (r dbReader) selectAll(t *Table) string {
	return `SELECT ` + r.db.dialect().columns(t.Names()) + ` FROM ` + r.db.from(t)
}

// count reads a query's one INTEGER.
func (r dbReader) count(ctx context.Context, what, query string, args ...any) (int64, error) {
	n, err := readTable(ctx, r.db, countCodec, what, query, args...)
	if err != nil || len(n) == 0 {
		return 0, err
	}
	return n[0], nil
}

// KeyCount returns how many (window, dims) keys the sink holds.
func (r dbReader) KeyCount(ctx context.Context) (int64, error) {
	return r.count(ctx, "count "+HourlyRevenue.Name, `SELECT COUNT(*) FROM `+r.db.from(HourlyRevenue))
}

// AuditCounts counts the audit tables' rows, one per source_position, in one
// query (BigQuery bills a query at least 10 MB).
func (r dbReader) AuditCounts(ctx context.Context) (sink.AuditCounts, error) {
	count := func(t *Table) string { return `(SELECT COUNT(*) FROM ` + r.db.from(t) + `)` }
	c, err := readTable(ctx, r.db, auditCountsCodec, "count the audit tables",
		`SELECT `+count(TooLateEvents)+`, `+count(ConflictEvents)+`, `+count(QuarantinedEvents))
	if err != nil || len(c) == 0 {
		return sink.AuditCounts{}, err
	}
	return c[0], nil
}

// Tally counts the tables where they are stored, one row per revision and
// per source_position, reading only the last windows' rows for Latest.
func (r dbReader) Tally(ctx context.Context, latest int) (sink.Tally, error) {
	t := sink.Tally{Current: map[model.ResultState]int64{}}
	counts, err := readTable(ctx, r.db, windowCountCodec, "count "+HourlyRevenue.Name, `SELECT window_start, result_state, COUNT(*) FROM `+
		r.db.from(HourlyRevenue)+` GROUP BY window_start, result_state`)
	if err != nil {
		return t, err
	}
	perStart := map[int64]int64{}
	for _, c := range counts {
		t.Current[c.state] += c.n
		perStart[c.start] += c.n
	}
	// The latest rows lie in the last window starts holding latest of them.
	var from, seen int64
	for _, s := range slices.Backward(slices.Sorted(maps.Keys(perStart))) {
		if seen >= int64(latest) {
			break
		}
		from, seen = s, seen+perStart[s]
	}
	if latest > 0 && len(perStart) > 0 {
		rows, err := r.CurrentRowsFrom(ctx, from)
		if err != nil {
			return t, err
		}
		t.Latest = rows[max(0, len(rows)-latest):]
	}
	for _, c := range []struct {
		n *int64
		t *Table
	}{{&t.Changelog, HourlyRevenueChangelog}, {&t.TooLate, TooLateEvents}, {&t.Conflicts, ConflictEvents}, {&t.Quarantined, QuarantinedEvents}} {
		if *c.n, err = r.count(ctx, "count "+c.t.Name, `SELECT COUNT(*) FROM `+r.db.from(c.t)); err != nil {
			return t, err
		}
	}
	return t, nil
}

type windowCount struct {
	start int64
	state model.ResultState
	n     int64
}

// The codecs of the counting queries, read like a table's rows.
var (
	countCodec = codec[int64]{t: &Table{Name: "count", Columns: []Column{{Name: "n", Type: Int64}}},
		get: func(v []any) (int64, error) { return v[0].(int64), nil }}
	auditCountsCodec = codec[sink.AuditCounts]{t: &Table{Name: "audit counts", Columns: []Column{
		{Name: "too_late", Type: Int64}, {Name: "conflicts", Type: Int64}, {Name: "quarantined", Type: Int64}}},
		get: func(v []any) (sink.AuditCounts, error) {
			return sink.AuditCounts{TooLate: v[0].(int64), Conflicts: v[1].(int64), Quarantined: v[2].(int64)}, nil
		}}
	windowCountCodec = codec[windowCount]{t: &Table{Name: HourlyRevenue.Name, Columns: []Column{
		{Name: "window_start", Type: Time}, {Name: "result_state", Type: String}, {Name: "n", Type: Int64}}},
		get: func(v []any) (windowCount, error) {
			st, err := model.ParseResultState(v[1].(string))
			return windowCount{start: v[0].(int64), state: st, n: v[2].(int64)}, err
		}}
)

// sqlDialect is what differs between SQLite and BigQuery in the shared
// queries: identifier quotes, and in latestSQL the substring position
// function and a digits-to-integer cast (0 when empty).
type sqlDialect struct {
	quote  string
	strpos string
	toInt  func(expr string) string
}

// columns renders names quoted, comma-separated.
func (d sqlDialect) columns(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = d.quote + n + d.quote
	}
	return strings.Join(out, ", ")
}

// rowsOf orders a read's rows by key then revision, dropping written_at.
func rowsOf(rows []sink.ChangelogEntry, err error) ([]model.Row, error) {
	if err != nil {
		return nil, err
	}
	return sortedRows(snapshots(rows)), nil
}

// entriesOf orders a read's rows by key then revision.
func entriesOf(rows []sink.ChangelogEntry, err error) ([]sink.ChangelogEntry, error) {
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b sink.ChangelogEntry) int { return model.CompareRows(a.Row, b.Row) })
	return rows, nil
}

// snapshots drops written_at.
func snapshots(rows []sink.ChangelogEntry) []model.Row {
	out := make([]model.Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}
