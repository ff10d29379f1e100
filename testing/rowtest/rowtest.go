// Package rowtest holds the small helpers the pipeline, source and launcher
// tests share to write expected snapshot rows in a line and print a whole
// table when they differ.
package rowtest

import (
	"fmt"
	"strconv"
	"strings"
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
