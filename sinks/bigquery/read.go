package bigquery

import (
	"context"
	"math/big"
	"strings"
	"time"

	gbq "cloud.google.com/go/bigquery"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ratMicros is an exact NUMERIC value for an amount in micros.
func ratMicros(m int64) *big.Rat { return big.NewRat(m, 1_000_000) }

// rows runs a query whose args are gbq.QueryParameters.
func (b *BigQuery) rows(ctx context.Context, what string, t *table.Table, sql string, args []any, each func([]any) error) error {
	params := slicesx.Map(args, func(a any) gbq.QueryParameter { return a.(gbq.QueryParameter) })
	return b.read(ctx, what, sql, params, func(it *gbq.RowIterator) error {
		var row []gbq.Value
		if err := it.Next(&row); err != nil {
			return err
		}
		vals, err := fromBQ(t, row)
		if err != nil {
			return err
		}
		return each(vals)
	})
}

// from keeps one row per revision of the changelog and per source_position
// of an audit table: appended rows may be repeated.
func (b *BigQuery) from(t *table.Table) string {
	switch {
	case t == table.HourlyRevenueChangelog:
		return "(SELECT * FROM " + b.table(t.Name) + " WHERE TRUE" + oncePer("window_start, dims, revision", revisionOrder) + ")"
	case table.IsAudit(t):
		once := oncePer("source_position", strings.Join(t.Names()[1:], ", "))
		return "(SELECT " + bqDialect.Columns(t.Names()) + " FROM " + b.table(t.Name) + " WHERE TRUE" + once + ")"
	}
	return b.table(t.Name)
}

// changelog reads the changelog, one row per revision, or the current view
// (which keeps no written_at), from q.From on when it is set.
func (b *BigQuery) changelog(ctx context.Context, q sink.Query) ([]sink.ChangelogEntry, error) {
	filter, args := "TRUE", []any(nil)
	if q.From != nil {
		filter, args = `window_start >= TIMESTAMP_MILLIS(@from)`, []any{gbq.QueryParameter{Name: "from", Value: *q.From}}
	}
	name, cols, once := table.HourlyRevenueChangelog.Name, bqDialect.Columns(table.HourlyRevenueChangelog.Names()), oncePer("window_start, dims, revision", revisionOrder)
	if q.Current {
		name = table.HourlyRevenue.Name
		cols, once = bqDialect.Columns(table.HourlyRevenue.Names())+", CAST(NULL AS TIMESTAMP) AS written_at, writer", ""
	}
	sql := `SELECT ` + cols + ` FROM ` + b.table(name) + ` WHERE ` + filter + once
	return sqlread.Read(ctx, b.DB, table.ChangelogCodec, "read "+name, sql, args...)
}

// extremeTime is sqlread.DB.Extreme: MAX or MIN over TIMESTAMP.
func (b *BigQuery) extremeTime(ctx context.Context, what, col, where string, latest bool) (ms int64, ok bool, err error) {
	agg := "MIN"
	if latest {
		agg = "MAX"
	}
	t, err := sqlread.Scalar(ctx, b.DB, table.Time, what, `SELECT `+agg+`(`+col+`) AS t FROM `+b.table(table.HourlyRevenue.Name)+` WHERE `+where)
	ms, ok = t.(int64)
	return ms, ok, err
}

var bqDialect = sqlread.Dialect{Quote: "`", StrPos: "STRPOS", ToInt: func(e string) string { return "COALESCE(SAFE_CAST(" + e + " AS INT64), 0)" }}
