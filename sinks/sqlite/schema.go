package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// Every column is scanned as it is stored, then converted one by one: SQLite
// keeps whatever a column was given ('zz' in an INTEGER column, NULL
// anywhere), and such a value must be one sink.RowError naming its column,
// not an error that ends the read.
type sqliteScanner struct {
	t    *table.Table
	dest []any
	raw  []any
	vals []any
}

func newSQLiteScanner(t *table.Table) *sqliteScanner {
	n := len(t.Columns)
	s := &sqliteScanner{t: t, dest: make([]any, n), raw: make([]any, n), vals: make([]any, n)}
	for i := range s.dest {
		s.dest[i] = &s.raw[i]
	}
	return s
}

// scan reads the current row; the values are valid until the next call.
func (s *sqliteScanner) scan(rs *sql.Rows) ([]any, error) {
	if err := rs.Scan(s.dest...); err != nil {
		return nil, err
	}
	for i, c := range s.t.Columns {
		v, err := s.value(i, c)
		if err != nil {
			return nil, &sink.RowError{Column: c.Name, Err: err}
		}
		s.vals[i] = v
	}
	return s.vals, nil
}

// text is column i's stored value as text ("" for NULL): what value parses,
// and what names a row that cannot be read (keyed).
func (s *sqliteScanner) text(i int) string {
	switch v := s.raw[i].(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// value converts column i's stored value to the codec's type.
func (s *sqliteScanner) value(i int, c table.Column) (any, error) {
	switch raw := s.raw[i]; {
	case raw == nil && c.Nullable:
		return nil, nil
	case raw == nil:
		return nil, errors.New("NULL")
	case c.Type == table.Int64:
		if n, ok := raw.(int64); ok {
			return n, nil
		}
		text := s.text(i)
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer: %q", text)
		}
		return n, nil
	}
	return table.ParseText(c, s.text(i))
}
