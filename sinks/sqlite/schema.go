package sqlite

import (
	"database/sql"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// The SQLite form of the table contract: times as RFC 3339 TEXT, money as
// decimal TEXT, so the file reads well in the sqlite3 shell.

// ident quotes a name: "partition" is an SQL keyword.
func ident(name string) string { return `"` + name + `"` }

func sqliteType(c table.Column) string {
	if c.Type == table.Int64 {
		return "INTEGER"
	}
	return "TEXT"
}

func sqliteDDL(t *table.Table) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + ident(t.Name) + " (\n")
	for _, c := range t.Columns {
		b.WriteString("\t" + ident(c.Name) + " " + sqliteType(c))
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(",\n")
	}
	b.WriteString("\tPRIMARY KEY (" + identList("", t.Key) + ")\n)")
	return b.String()
}

// identList renders names quoted, comma-separated, each prefixed "alias.".
func identList(alias string, names []string) string {
	if alias != "" {
		alias += "."
	}
	return strings.Join(slicesx.Map(names, func(n string) string { return alias + ident(n) }), ", ")
}

// sqliteInsertPrefix is the head of a multi-row INSERT into t (see bulk).
func sqliteInsertPrefix(verb string, t *table.Table) string {
	return verb + " INTO " + ident(t.Name) + " (" + identList("", t.Names()) + ") VALUES "
}

// sqliteUpsertSuffix makes an INSERT replace the row stored under its key.
func sqliteUpsertSuffix(t *table.Table) string {
	set := slices.DeleteFunc(t.Names(), func(n string) bool { return slices.Contains(t.Key, n) })
	for i, n := range set {
		set[i] = ident(n) + " = excluded." + ident(n)
	}
	return " ON CONFLICT (" + identList("", t.Key) + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// sqliteArgs appends records' column values (c.Put) as SQLite parameters.
func sqliteArgs[T any](c table.Codec[T], dst []any, recs ...T) []any {
	for _, v := range recs {
		n := len(dst)
		dst = c.Put(dst, v)
		for i, col := range c.Table.Columns {
			if dst[n+i] != nil {
				dst[n+i] = table.Text(col, dst[n+i])
			}
		}
	}
	return dst
}

// sqliteScanner scans a result row of t's columns into a codec's values.
type sqliteScanner struct {
	t     *table.Table
	dest  []any
	texts []string
	ints  []int64
	nulls []sql.NullInt64
	vals  []any
}

func newSQLiteScanner(t *table.Table) *sqliteScanner {
	n := len(t.Columns)
	s := &sqliteScanner{t: t, dest: make([]any, n), texts: make([]string, n), ints: make([]int64, n),
		nulls: make([]sql.NullInt64, n), vals: make([]any, n)}
	for i, c := range t.Columns {
		switch {
		case c.Type == table.Int64 && c.Nullable:
			s.dest[i] = &s.nulls[i]
		case c.Type == table.Int64:
			s.dest[i] = &s.ints[i]
		default:
			s.dest[i] = &s.texts[i]
		}
	}
	return s
}

// scan reads the current row; the values are valid until the next call.
func (s *sqliteScanner) scan(rs *sql.Rows) ([]any, error) {
	if err := rs.Scan(s.dest...); err != nil {
		return nil, err
	}
	var err error
	for i, c := range s.t.Columns {
		switch c.Type {
		case table.Int64:
			if c.Nullable {
				s.vals[i] = nil
				if s.nulls[i].Valid {
					s.vals[i] = s.nulls[i].Int64
				}
			} else {
				s.vals[i] = s.ints[i]
			}
		default:
			s.vals[i], err = table.ParseText(c, s.texts[i])
		}
		if err != nil {
			return nil, &sink.RowError{Column: c.Name, Err: err}
		}
	}
	return s.vals, nil
}
