// Package rowtest holds the small helpers the pipeline, source, sink and
// launcher tests share to write input lines and expected snapshot rows in a
// line, and to compare rows printing whole tables when they differ.
package rowtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// MS parses an RFC 3339 instant into epoch milliseconds; it panics on a bad
// literal (test set-up).
func MS(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// Purchase renders one input line of a purchase; extra is "key":value JSON
// fragments appended to the object (dimensions, unknown fields).
func Purchase(id, eventTime, user, amount string, extra ...string) string {
	fields := []string{
		fmt.Sprintf(`"event_id":%q`, id),
		fmt.Sprintf(`"event_time":%q`, eventTime),
		fmt.Sprintf(`"user_id":%q`, user),
		fmt.Sprintf(`"amount":%q`, amount),
	}
	return "{" + strings.Join(append(fields, extra...), ",") + "}"
}

// OwnPurchase is a purchase by a user of its own, u-<id>: copies of one id
// are then identical lines (duplicates, never conflicts).
func OwnPurchase(id, eventTime, amount string) string {
	return Purchase(id, eventTime, "u-"+id, amount)
}

// Micros parses a decimal literal such as "170" or "-1.5" into exact micros.
func Micros(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	units, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		panic(err)
	}
	f, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err != nil {
		panic(err)
	}
	v := units*1_000_000 + f
	if neg {
		return -v
	}
	return v
}

// Row is an expected stream row of a window starting at start, without
// dimensions.
func Row(start string, window time.Duration, revenue string, count, rev int64, st model.ResultState) model.Row {
	s := MS(start)
	return model.Row{WindowStart: s, WindowEnd: s + window.Milliseconds(), Dims: "{}", RevenueMicros: Micros(revenue),
		EventCount: count, Revision: rev, State: st, Writer: "stream"}
}

// Table prints rows one a line, for failure messages.
func Table(rows []model.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s %-10s %s n=%d rev=%d %s\n", model.FormatTime(r.WindowStart), r.Dims,
			model.FormatMicros(r.RevenueMicros), model.FormatTime(r.WindowEnd), r.EventCount, r.Revision, r.State)
	}
	return b.String()
}

// AssertRows fails t unless got equals want row for row, in order.
func AssertRows(t testing.TB, what string, got, want []model.Row) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s differ\n got:\n%s want:\n%s", what, Table(got), Table(want))
	}
}

// AssertRowSet is AssertRows for rows whose order the runner decides: both
// sides are compared in model.CompareRows order (got and want are sorted in
// place).
func AssertRowSet(t testing.TB, what string, got, want []model.Row) {
	t.Helper()
	slices.SortStableFunc(got, model.CompareRows)
	slices.SortStableFunc(want, model.CompareRows)
	AssertRows(t, what, got, want)
}

// MinimalChangelog is what SPEC §7's minimal sequence leaves in the
// changelog when the runner sees the watermark between records (one record
// per reader call): ON_TIME 150, LATE 170, FINAL 170 for [10:00, 11:00) and
// ON_TIME and FINAL rows for the windows of X and Y. A fresh slice per call.
func MinimalChangelog() []model.Row {
	return []model.Row{
		Row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 1, model.OnTime),
		Row("2026-11-04T10:00:00Z", time.Hour, "170", 3, 2, model.Late),
		Row("2026-11-04T10:00:00Z", time.Hour, "170", 3, 3, model.Final),
		Row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 1, model.OnTime),
		Row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 2, model.Final),
		Row("2026-11-05T11:00:00Z", time.Hour, "2", 1, 1, model.OnTime),
		Row("2026-11-05T11:00:00Z", time.Hour, "2", 1, 2, model.Final),
	}
}
