package sqlread

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// DB is what the SQL backends (SQLite, BigQuery) answer alike; its methods
// build the rest of sink.Reader on it, and the backends embed it.
type DB struct {
	// Rows runs query, which selects t's columns in order, and calls each
	// with every row's values. A *sink.RowError skips the row, which the
	// backend names in an UnreadableRows error returned with the others.
	Rows func(ctx context.Context, what string, t *table.Table, query string, args []any, each func([]any) error) error
	// From is what t's rows are selected from: one row per key, where rows
	// are appended (BigQuery).
	From func(t *table.Table) string
	// ReadChangelog reads the rows q selects, unordered.
	ReadChangelog func(ctx context.Context, q sink.Query) ([]sink.ChangelogEntry, error)
	// Extreme returns the latest (or earliest) value of hourly_revenue's
	// time column col among the current rows where selects; ok is false
	// when it selects none.
	Extreme func(ctx context.Context, what, col, where string, latest bool) (ms int64, ok bool, err error)
	Dialect Dialect
}

// Read reads records of c's table through query.
func Read[T any](ctx context.Context, db DB, c table.Codec[T], what, query string, args ...any) ([]T, error) {
	var out []T
	err := db.Rows(ctx, what, c.Table, query, args, c.Each(func(v T) { out = append(out, v) }))
	return out, err
}

// Changelog reads the rows q selects (ReadChangelog), ordered by key then
// revision.
func (db DB) Changelog(ctx context.Context, q sink.Query) ([]sink.ChangelogEntry, error) {
	rows, err := db.ReadChangelog(ctx, q)
	if _, ok := sink.Unreadable(err); !ok {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b sink.ChangelogEntry) int { return model.CompareRows(a.Row, b.Row) })
	return rows, err
}

func (db DB) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	return db.Extreme(ctx, "read final horizon", "window_end", `result_state = 'FINAL'`, true)
}

func (db DB) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	return db.Extreme(ctx, "read earliest open window", "window_start", `result_state <> 'FINAL'`, false)
}

func (db DB) Audit(ctx context.Context) (sink.Audit, error) { return readAudits(ctx, db, all) }

// LatestAudit cuts the audit tables where they are stored (latestSQL).
func (db DB) LatestAudit(ctx context.Context, n int) (sink.Audit, error) {
	return readAudits(ctx, db, max(n, 0))
}

func readAudits(ctx context.Context, db DB, latest int) (a sink.Audit, err error) {
	var errs [3]error
	a.TooLate, errs[0] = readAudit(ctx, db, table.TooLateCodec, latest)
	a.Conflicts, errs[1] = readAudit(ctx, db, table.ConflictCodec, latest)
	a.Quarantined, errs[2] = readAudit(ctx, db, table.QuarantinedCodec, latest)
	return a, errors.Join(errs[:]...)
}

// all asks readAudit for every row.
const all = -1

// readAudit reads an audit table ordered by source_position, or the latest
// rows (latestSQL) when latest is not all.
func readAudit[T any](ctx context.Context, db DB, c table.Codec[T], latest int) ([]T, error) {
	d := db.Dialect
	cols, from := d.Columns(c.Table.Names()), db.From(c.Table)
	switch latest {
	case all:
		return Read(ctx, db, c, "read "+c.Table.Name, `SELECT `+cols+` FROM `+from+` ORDER BY source_position`)
	case 0:
		return nil, nil
	}
	return Read(ctx, db, c, "read latest "+c.Table.Name, latestSQL(d, cols, from, latest))
}

// RunConfig returns the stored run settings.
func (db DB) RunConfig(ctx context.Context) (map[string]string, error) {
	rows, err := Read(ctx, db, table.ConfigCodec, "read "+table.RunConfig.Name, db.selectAll(table.RunConfig))
	if err != nil {
		return nil, err
	}
	return table.ConfigMap(rows), nil
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (db DB) Diffs(ctx context.Context) ([]sink.Diff, error) {
	out, err := Read(ctx, db, table.DiffCodec, "read "+table.ReconcileDiffs.Name, db.selectAll(table.ReconcileDiffs))
	if err != nil {
		return nil, err
	}
	sortDiffs(out)
	return out, nil
}

func (db DB) selectAll(t *table.Table) string {
	return `SELECT ` + db.Dialect.Columns(t.Names()) + ` FROM ` + db.From(t)
}

// Checkpoints reads the rows of c's progress table (source_checkpoints or
// source_resume) that filter, the query's WHERE and ORDER BY, keeps, by
// partition, then file.
func Checkpoints(ctx context.Context, db DB, c table.Codec[table.CheckpointRow], filter string, args ...any) ([]model.Checkpoint, error) {
	rows, err := Read(ctx, db, c, "read "+c.Table.Name, db.selectAll(c.Table)+filter, args...)
	out := table.CheckpointsOf(rows)
	rules.SortCheckpoints(out)
	return out, err
}

// Scalar reads a query's one value of typ: nil for NULL or no row.
func Scalar(ctx context.Context, db DB, typ table.Type, what, query string, args ...any) (any, error) {
	c := table.Codec[any]{Table: &table.Table{Name: what, Columns: []table.Column{{Name: "value", Type: typ, Nullable: true}}},
		Get: func(v []any) (any, error) { return v[0], nil }}
	v, err := Read(ctx, db, c, what, query, args...)
	if err != nil || len(v) == 0 {
		return nil, err
	}
	return v[0], nil
}

// Count reads a query's one INTEGER.
func Count(ctx context.Context, db DB, what, query string, args ...any) (int64, error) {
	n, err := Scalar(ctx, db, table.Int64, what, query, args...)
	c, _ := n.(int64)
	return c, err
}

// StoredRow is a key's stored row as the revision rules see it.
type StoredRow struct {
	rules.Key
	rules.Stored
}

// StoredCodec reads StoredRows: a write's lookup of the keys it writes.
var StoredCodec = table.Codec[StoredRow]{Table: &table.Table{Name: table.HourlyRevenue.Name, Columns: []table.Column{
	{Name: "window_start", Type: table.Time}, {Name: "dims", Type: table.String}, {Name: "revision", Type: table.Int64},
	{Name: "result_state", Type: table.String}, {Name: "event_count", Type: table.Int64}}},
	Get: func(v []any) (StoredRow, error) {
		st, err := model.ParseResultState(v[3].(string))
		return StoredRow{rules.Key{WindowStart: v[0].(int64), Dims: v[1].(string)},
			rules.Stored{Revision: v[2].(int64), State: st, Count: v[4].(int64)}}, err
	}}

// KeyCount returns how many (window, dims) keys the sink holds.
func (db DB) KeyCount(ctx context.Context) (int64, error) {
	return Count(ctx, db, "count "+table.HourlyRevenue.Name, `SELECT COUNT(*) FROM `+db.From(table.HourlyRevenue))
}

// AuditCounts counts the audit tables' rows, one per source_position, in one
// query (BigQuery bills a query at least 10 MB).
func (db DB) AuditCounts(ctx context.Context) (sink.AuditCounts, error) {
	count := func(t *table.Table) string { return `(SELECT COUNT(*) FROM ` + db.From(t) + `)` }
	c, err := Read(ctx, db, auditCountsCodec, "count the audit tables",
		`SELECT `+count(table.TooLateEvents)+`, `+count(table.ConflictEvents)+`, `+count(table.QuarantinedEvents))
	if err != nil || len(c) == 0 {
		return sink.AuditCounts{}, err
	}
	return c[0], nil
}

// Tally counts the tables where they are stored, one row per revision and
// per source_position, reading only the last windows' rows for Latest.
func (db DB) Tally(ctx context.Context, latest int) (sink.Tally, error) {
	t := sink.Tally{Current: map[model.ResultState]int64{}}
	counts, err := Read(ctx, db, windowCountCodec, "count "+table.HourlyRevenue.Name, `SELECT window_start, result_state, COUNT(*) FROM `+
		db.From(table.HourlyRevenue)+` GROUP BY window_start, result_state`)
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
		rows, err := sink.Rows(db.Changelog(ctx, sink.Query{Current: true, From: &from}))
		if err != nil {
			return t, err
		}
		t.Latest = rows[max(0, len(rows)-latest):]
	}
	t.AuditCounts, err = db.AuditCounts(ctx)
	if err == nil {
		t.Changelog, err = Count(ctx, db, "count "+table.HourlyRevenueChangelog.Name, `SELECT COUNT(*) FROM `+db.From(table.HourlyRevenueChangelog))
	}
	return t, err
}

type windowCount struct {
	start int64
	state model.ResultState
	n     int64
}

// The codecs of the counting queries, read like a table's rows.
var (
	auditCountsCodec = table.Codec[sink.AuditCounts]{Table: &table.Table{Name: "audit counts", Columns: []table.Column{
		{Name: "too_late", Type: table.Int64}, {Name: "conflicts", Type: table.Int64}, {Name: "quarantined", Type: table.Int64}}},
		Get: func(v []any) (sink.AuditCounts, error) {
			return sink.AuditCounts{TooLate: v[0].(int64), Conflicts: v[1].(int64), Quarantined: v[2].(int64)}, nil
		}}
	windowCountCodec = table.Codec[windowCount]{Table: &table.Table{Name: table.HourlyRevenue.Name, Columns: []table.Column{
		{Name: "window_start", Type: table.Time}, {Name: "result_state", Type: table.String}, {Name: "n", Type: table.Int64}}},
		Get: func(v []any) (windowCount, error) {
			st, err := model.ParseResultState(v[1].(string))
			return windowCount{start: v[0].(int64), state: st, n: v[2].(int64)}, err
		}}
)

// Dialect is what differs between SQLite and BigQuery in the shared
// queries: identifier quotes, and in latestSQL the substring position
// function and a digits-to-integer cast (0 when empty).
type Dialect struct {
	Quote  string
	StrPos string
	ToInt  func(expr string) string
}

// Columns renders names quoted, comma-separated.
func (d Dialect) Columns(names []string) string {
	return strings.Join(slicesx.Map(names, func(n string) string { return d.Quote + n + d.Quote }), ", ")
}

// latestSQL selects cols of the n rows of from that arrived last, newest
// first, by source_position in app/live's CompareArrival order (the tables
// keep no write time), split as rawlog.ParsePosition does. ABS keeps SUBSTR
// lengths non-negative, which BigQuery requires even in a branch not taken.
func latestSQL(d Dialect, cols, from string, n int) string {
	named := rawlog.NamedPartition + ":"
	file := `CASE WHEN NOT (SUBSTR(source_position, 1, ` + strconv.Itoa(len(named)) + `) = '` + named + `' AND LENGTH(source_position) > ` + strconv.Itoa(len(named)) + `)
	AND SUBSTR(arr_rest, -1) = ':' AND LENGTH(arr_rest) >= 2 AND arr_line >= 1
	AND (arr_slash = 0 OR (arr_slash > 1 AND arr_slash < LENGTH(arr_path))) THEN 1 ELSE 0 END`
	return `SELECT ` + cols + ` FROM (
SELECT ` + cols + `, ` + file + ` AS arr_file,
	CASE WHEN arr_slash > 0 THEN SUBSTR(arr_path, arr_slash + 1) ELSE arr_path END AS arr_name, arr_line,
	CASE WHEN arr_slash > 0 THEN SUBSTR(arr_path, 1, ABS(arr_slash - 1)) ELSE '` + rawlog.RootPartition + `' END AS arr_partition
FROM (SELECT ` + cols + `, arr_rest, arr_path, arr_line, ` + d.StrPos + `(arr_path, '/') AS arr_slash
FROM (SELECT ` + cols + `, arr_rest, SUBSTR(arr_rest, 1, ABS(LENGTH(arr_rest) - 1)) AS arr_path,
	` + d.ToInt(`SUBSTR(source_position, LENGTH(arr_rest) + 1)`) + ` AS arr_line
FROM (SELECT ` + cols + `, RTRIM(source_position, '0123456789') AS arr_rest FROM ` + from + `))))
ORDER BY arr_file DESC, CASE WHEN arr_file = 1 THEN arr_name ELSE '' END DESC, CASE WHEN arr_file = 1 THEN arr_line ELSE 0 END DESC,
	CASE WHEN arr_file = 1 THEN arr_partition ELSE '' END DESC, source_position DESC
LIMIT ` + strconv.Itoa(n)
}

// sortDiffs orders reconcile diffs by run, window and dims.
func sortDiffs(out []sink.Diff) {
	slices.SortStableFunc(out, func(a, b sink.Diff) int {
		return cmp.Or(strings.Compare(a.RunID, b.RunID), cmp.Compare(a.WindowStart, b.WindowStart), strings.Compare(a.Dims, b.Dims))
	})
}
