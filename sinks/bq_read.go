package sinks

import (
	"context"
	"math/big"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/revenue-stream/hourly/model"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ratMicros is an exact NUMERIC value for an amount in micros.
func ratMicros(m int64) *big.Rat { return big.NewRat(m, 1_000_000) }

// bqColumns is t's column list for a SELECT.
func bqColumns(t *Table) string { return strings.Join(t.Names(), ", ") }

// bqQuotedColumns is bqColumns with every name quoted (see bqIdent).
func bqQuotedColumns(t *Table) string {
	names := t.Names()
	for i, n := range names {
		names[i] = bqIdent(n)
	}
	return strings.Join(names, ", ")
}

// readBQ runs a query selecting c's table's columns in order.
func readBQ[T any](ctx context.Context, b *BigQuery, c codec[T], what, sql string, params ...bigquery.QueryParameter) ([]T, error) {
	var out []T
	err := b.read(ctx, what, sql, params, func(it *bigquery.RowIterator) error {
		var row []bigquery.Value
		if err := it.Next(&row); err != nil {
			return err
		}
		vals, err := fromBQ(c.t, row)
		if err != nil {
			return err
		}
		v, err := c.get(vals)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// RunConfig returns the stored run settings.
func (b *BigQuery) RunConfig(ctx context.Context) (map[string]string, error) {
	rows, err := readBQ(ctx, b, configCodec, "read "+bqRunConfig, `SELECT `+bqColumns(RunConfig)+` FROM `+b.table(bqRunConfig))
	if err != nil {
		return nil, err
	}
	return configMap(rows), nil
}

// CurrentRows returns the current snapshot of every key (the hourly_revenue
// view), ordered by window_start then dims.
func (b *BigQuery) CurrentRows(ctx context.Context) ([]model.Row, error) {
	return rowsOf(b.readChangelog(ctx, bqCurrent, nil))
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms): a filter on the partition column, which BigQuery
// applies before the view's QUALIFY, pruning the older day partitions.
func (b *BigQuery) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(b.readChangelog(ctx, bqCurrent, &windowStart))
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (b *BigQuery) Changelog(ctx context.Context) ([]model.Row, error) {
	return rowsOf(b.readChangelog(ctx, bqChangelog, nil))
}

// ChangelogFrom is Changelog limited to windows starting at or after
// windowStart (epoch ms), pruning the older day partitions.
func (b *BigQuery) ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return rowsOf(b.readChangelog(ctx, bqChangelog, &windowStart))
}

// ChangelogEntries is Changelog with each snapshot's written_at.
func (b *BigQuery) ChangelogEntries(ctx context.Context) ([]ChangelogEntry, error) {
	return entriesOf(b.readChangelog(ctx, bqChangelog, nil))
}

// ChangelogEntriesFrom is ChangelogFrom with each snapshot's written_at.
func (b *BigQuery) ChangelogEntriesFrom(ctx context.Context, windowStart int64) ([]ChangelogEntry, error) {
	return entriesOf(b.readChangelog(ctx, bqChangelog, &windowStart))
}

// readChangelog reads the changelog, one row per revision, or the current
// view (which keeps no written_at), from *from on when from is set.
func (b *BigQuery) readChangelog(ctx context.Context, table string, from *int64) ([]ChangelogEntry, error) {
	filter, params := "TRUE", []bigquery.QueryParameter(nil)
	if from != nil {
		filter, params = `window_start >= TIMESTAMP_MILLIS(@from)`, []bigquery.QueryParameter{{Name: "from", Value: *from}}
	}
	cols, once := bqColumns(HourlyRevenueChangelog), oncePer("window_start, dims, revision", revisionOrder)
	if table == bqCurrent {
		cols, once = bqColumns(HourlyRevenue)+", CAST(NULL AS TIMESTAMP) AS written_at, writer", ""
	}
	sql := `SELECT ` + cols + ` FROM ` + b.table(table) + ` WHERE ` + filter + once
	return readBQ(ctx, b, changelogCodec, "read "+table, sql, params...)
}

// KeyCount returns how many (window, dims) keys the sink holds.
func (b *BigQuery) KeyCount(ctx context.Context) (int64, error) {
	return b.readCount(ctx, "count "+bqCurrent, `SELECT COUNT(*) AS n FROM `+b.table(bqCurrent), nil)
}

func (b *BigQuery) readCount(ctx context.Context, what, sql string, params []bigquery.QueryParameter) (n int64, err error) {
	err = b.read(ctx, what, sql, params, func(it *bigquery.RowIterator) error {
		var r struct {
			N int64 `bigquery:"n"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		n = r.N
		return nil
	})
	return n, err
}

// FinalHorizon returns the latest window_end among FINAL rows (see
// SQLite.FinalHorizon).
func (b *BigQuery) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	return b.readTime(ctx, "read final horizon", `SELECT MAX(window_end) AS t FROM `+b.table(bqCurrent)+`
WHERE result_state = 'FINAL'`)
}

// readTime returns a one-row query's TIMESTAMP t in epoch ms; ok is false for NULL.
func (b *BigQuery) readTime(ctx context.Context, what, sql string) (ms int64, ok bool, err error) {
	err = b.read(ctx, what, sql, nil, func(it *bigquery.RowIterator) error {
		var r struct {
			T bigquery.NullTimestamp `bigquery:"t"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		if r.T.Valid {
			ms, ok = r.T.Timestamp.UnixMilli(), true
		}
		return nil
	})
	return ms, ok, err
}

// TooLate returns the too_late_events rows ordered by source_position.
func (b *BigQuery) TooLate(ctx context.Context) ([]model.TooLate, error) {
	return readBQAudit(ctx, b, tooLateCodec)
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (b *BigQuery) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	return readBQAudit(ctx, b, conflictCodec)
}

// Quarantined returns the quarantined_events rows ordered by source_position.
func (b *BigQuery) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	return readBQAudit(ctx, b, quarantinedCodec)
}

// readBQAudit reads an audit table, one row per source_position.
func readBQAudit[T any](ctx context.Context, b *BigQuery, c codec[T]) ([]T, error) {
	return readBQ(ctx, b, c, "read "+c.t.Name, b.auditSQL(c.t)+` ORDER BY source_position`)
}

func (b *BigQuery) auditSQL(t *Table) string {
	rest := t.Names()[1:]
	return `SELECT ` + bqColumns(t) + ` FROM ` + b.table(t.Name) + ` WHERE TRUE` + oncePer("source_position", strings.Join(rest, ", "))
}

var bqDialect = sqlDialect{strpos: "STRPOS", toInt: func(e string) string { return "COALESCE(SAFE_CAST(" + e + " AS INT64), 0)" }}

// LatestTooLate returns the n too_late_events rows that arrived last, newest
// first, cut by BigQuery (see latestSQL).
func (b *BigQuery) LatestTooLate(ctx context.Context, n int) ([]model.TooLate, error) {
	return readBQLatestAudit(ctx, b, tooLateCodec, n)
}

// LatestConflicts is LatestTooLate for conflict_events.
func (b *BigQuery) LatestConflicts(ctx context.Context, n int) ([]model.Conflict, error) {
	return readBQLatestAudit(ctx, b, conflictCodec, n)
}

// LatestQuarantined is LatestTooLate for quarantined_events.
func (b *BigQuery) LatestQuarantined(ctx context.Context, n int) ([]model.Quarantined, error) {
	return readBQLatestAudit(ctx, b, quarantinedCodec, n)
}

func readBQLatestAudit[T any](ctx context.Context, b *BigQuery, c codec[T], n int) ([]T, error) {
	if n <= 0 {
		return nil, nil
	}
	return readBQ(ctx, b, c, "read latest "+c.t.Name, latestSQL(bqDialect, bqColumns(c.t), "("+b.auditSQL(c.t)+")", n))
}

// AuditCounts counts the audit tables' positions in one query (a query is
// billed at least 10 MB).
func (b *BigQuery) AuditCounts(ctx context.Context) (c AuditCounts, err error) {
	count := func(t *Table) string { return `(SELECT COUNT(DISTINCT source_position) FROM ` + b.table(t.Name) + `)` }
	err = b.read(ctx, "count the audit tables", `SELECT `+count(TooLateEvents)+` AS too_late, `+count(ConflictEvents)+` AS conflicts, `+
		count(QuarantinedEvents)+` AS quarantined`, nil, func(it *bigquery.RowIterator) error {
		var r struct {
			TooLate     int64 `bigquery:"too_late"`
			Conflicts   int64 `bigquery:"conflicts"`
			Quarantined int64 `bigquery:"quarantined"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		c = AuditCounts{TooLate: r.TooLate, Conflicts: r.Conflicts, Quarantined: r.Quarantined}
		return nil
	})
	return c, err
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (b *BigQuery) Diffs(ctx context.Context) ([]Diff, error) {
	out, err := readBQ(ctx, b, diffCodec, "read "+bqDiffs, `SELECT `+bqColumns(ReconcileDiffs)+` FROM `+b.table(bqDiffs))
	if err != nil {
		return nil, err
	}
	sortDiffs(out)
	return out, nil
}
