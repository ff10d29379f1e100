package bigquery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	gbq "cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/sinks/internal/retry"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func isNotFound(err error) bool      { return httpCode(err) == http.StatusNotFound }
func isAlreadyExists(err error) bool { return httpCode(err) == http.StatusConflict }

// transient reports whether a failed statement may succeed when retried:
// rate limits, backend and internal errors (BigQuery's error reference says to
// retry jobInternalError, a 400), and "concurrent update" of overlapping DML.
// The emulator answers a locked table with jobInternalError too.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errPartialRead) {
		return false
	}
	switch httpCode(err) {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	msg := err.Error()
	return slices.ContainsFunc([]string{"rateLimitExceeded", "backendError", "concurrent update", "internalError", "jobInternalError", "jobBackendError"},
		func(s string) bool { return strings.Contains(msg, s) })
}

// bqRetry is how every BigQuery call is retried: up to bqAttempts tries,
// quadratic waits, while retryable says the failure is transient; each retry
// is logged at level as msg with attrs.
func bqRetry(retryable func(error) bool, sleep func(context.Context, time.Duration) error, level slog.Level, msg string, attrs ...any) retry.Retrier {
	return retry.Retrier{Attempts: bqAttempts, Retryable: retryable, Wait: retry.Quadratic, Sleep: sleep, Level: level, Msg: msg, Attrs: attrs}
}

// retry runs a query or statement while it fails transiently.
func (b *BigQuery) retry(ctx context.Context, what string, try func() error) error {
	if _, err := bqRetry(transient, b.sleep, slog.LevelDebug, "bigquery sink: retrying", "what", what).Do(ctx, try); err != nil {
		return fmt.Errorf("bigquery sink %s: %s: %w", b, what, err)
	}
	return nil
}

// exec runs one DML statement, retrying transient failures, and returns the
// rows it changed; known is false when the server did not say (the emulator).
func (b *BigQuery) exec(ctx context.Context, what, sql string, params ...gbq.QueryParameter) (n int64, known bool, err error) {
	err = b.retry(ctx, what, func() error {
		q := b.client.Query(sql)
		q.Parameters = params
		job, err := q.Run(ctx)
		if err != nil {
			return err
		}
		status, err := job.Wait(ctx)
		if err != nil {
			return err
		}
		if err := status.Err(); err != nil {
			return err
		}
		if st, ok := status.Statistics.Details.(*gbq.QueryStatistics); ok && st.DMLStats != nil {
			n, known = st.NumDMLAffectedRows, true
		}
		return nil
	})
	return n, known, err
}

// read runs a query and calls next for each row (next calls it.Next). A
// failure is retried only while no row was delivered: callers accumulate rows.
func (b *BigQuery) read(ctx context.Context, what, sql string, params []gbq.QueryParameter, next func(*gbq.RowIterator) error) error {
	delivered := false
	return b.retry(ctx, what, func() error {
		q := b.client.Query(sql)
		q.Parameters = params
		it, err := q.Read(ctx)
		if err != nil {
			return err
		}
		for {
			err := next(it)
			if errors.Is(err, iterator.Done) {
				return nil
			}
			if err != nil {
				if delivered {
					return fmt.Errorf("%w: %w", errPartialRead, err)
				}
				return err
			}
			delivered = true
		}
	})
}

// errPartialRead marks a read that failed after delivering rows: not retried.
var errPartialRead = errors.New("read failed after delivering rows")

// rows runs a query whose args are gbq.QueryParameters. A row the table's codec cannot read
// (a state no writer stores) is skipped and named in an UnreadableRows error with the others.
func (b *BigQuery) rows(ctx context.Context, what string, t *table.Table, sql string, args []any, each func([]any) error) error {
	params := slicesx.Map(args, func(a any) gbq.QueryParameter { return a.(gbq.QueryParameter) })
	var bad sink.UnreadableRows
	err := b.read(ctx, what, sql, params, func(it *gbq.RowIterator) error {
		var row []gbq.Value
		if err := it.Next(&row); err != nil {
			return err
		}
		vals, err := fromBQ(t, row)
		if err == nil {
			err = each(vals)
		}
		return bad.Skip(err, t.Name)
	})
	return cmp.Or(err, bad.Err())
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
