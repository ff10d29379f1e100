package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// rows runs query; a row that cannot be read is skipped and named in an
// UnreadableRows error returned with the others.
func (s *SQLite) rows(ctx context.Context, what string, t *table.Table, query string, args []any, each func([]any) error) error {
	var bad sink.UnreadableRows
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err := scanAll(t, rs, err, each, func(e *sink.RowError) { bad = append(bad, e) }); err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	return bad.Err()
}

func (s *SQLite) from(t *table.Table) string { return ident(t.Name) }

// currentJoin is hourly_revenue joined with the written_at and writer of
// each stored revision: its unreadable rows are hourly_revenue's.
var currentJoin = &table.Table{Name: table.HourlyRevenue.Name, Columns: table.HourlyRevenueChangelog.Columns}

// changelog reads hourly_revenue_changelog, or hourly_revenue joined with it
// (currentJoin), through the primary key's index when From is set.
func (s *SQLite) changelog(ctx context.Context, query sink.Query) ([]sink.ChangelogEntry, error) {
	c, col, start := table.ChangelogCodec, "window_start", query.From
	q := "SELECT " + identList("", c.Table.Names()) + " FROM " + ident(c.Table.Name)
	if query.Current {
		c.Table, col = currentJoin, "h.window_start"
		q = `SELECT ` + identList("h", table.HourlyRevenue.Names()) + `, COALESCE(c.written_at, ''), COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision`
	}
	var args []any
	if start != nil {
		q, args = q+` WHERE `+col+` >= ?`, []any{secondPrefix(*start)}
	}
	rows, err := sqlread.Read(ctx, s.DB, c, "read "+c.Table.Name, q, args...)
	if start != nil {
		// The TEXT range on window_start is only a pre-filter (secondPrefix).
		rows = slices.DeleteFunc(rows, func(r sink.ChangelogEntry) bool { return r.WindowStart < *start })
	}
	return rows, err
}

var sqliteDialect = sqlread.Dialect{Quote: `"`, StrPos: "INSTR", ToInt: func(e string) string { return "CAST(" + e + " AS INTEGER)" }}

// extremeTime is sqlread.DB.Extreme. MIN and MAX over TEXT would misorder
// millisecond bounds, so it compares the parsed distinct values, each read
// with the key of a row holding it (SQLite takes a bare column from the row
// MIN chose): an unreadable value is named by table, window and column (SPEC
// §6) in an UnreadableRows error returned with the others' extreme.
func (s *SQLite) extremeTime(ctx context.Context, what, col, where string, latest bool) (ms int64, ok bool, err error) {
	t := &table.Table{Name: table.HourlyRevenue.Name, Columns: []table.Column{
		{Name: col, Type: table.Time}, {Name: "window_start", Type: table.String}, {Name: "dims", Type: table.String}}}
	q := `SELECT ` + ident(col) + `, MIN(window_start), dims FROM hourly_revenue WHERE ` + where + ` GROUP BY ` + ident(col)
	err = s.rows(ctx, what, t, q, nil, func(vals []any) error {
		if v := vals[0].(int64); !ok || latest && v > ms || !latest && v < ms {
			ms, ok = v, true
		}
		return nil
	})
	if _, unreadable := sink.Unreadable(err); !unreadable {
		return 0, false, err
	}
	return ms, ok, err
}

// scanAll calls each with the values of every row of rs, a result of t's
// columns (sqliteScanner), then closes rs; err is the query's. A row that
// cannot be read (a *sink.RowError of the scan or of each) is named by t and
// its key and, with skip, handed to it; else it ends the read.
func scanAll(t *table.Table, rs *sql.Rows, err error, each func([]any) error, skip func(*sink.RowError)) error {
	if err != nil {
		return err
	}
	defer rs.Close()
	sc := newSQLiteScanner(t)
	for rs.Next() {
		vals, err := sc.scan(rs)
		if err == nil {
			err = each(vals)
		}
		var re *sink.RowError
		switch {
		case errors.As(err, &re) && skip != nil:
			skip(keyed(re, t, sc.text))
		case err != nil:
			return err
		}
	}
	return rs.Err()
}

// keyed fills e's table and key, where unset, from a scanned row of t.
func keyed(e *sink.RowError, t *table.Table, text func(i int) string) *sink.RowError {
	if e.Table == "" {
		e.Table = t.Name
	}
	for i, c := range t.Columns {
		switch {
		case c.Name == "window_start" && e.WindowStart == "":
			e.WindowStart = strings.TrimSpace(text(i))
		case c.Name == "dims" && e.Dims == "":
			e.Dims = text(i)
		}
	}
	return e
}

// secondPrefix is ms's whole second as text ("2026-11-04T10:00:00"): a safe
// TEXT pre-filter, since full renderings put "10:00:00.500Z" before "10:00:00Z".
func secondPrefix(ms int64) string {
	s := model.FormatTime(ms - ((ms%1000)+1000)%1000)
	return strings.TrimSuffix(s, "Z")
}
