package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// reasons lists every SPEC reason in SPEC order, zeros too, then any other the counters carry.
func reasons(by map[string]int64) []metrics.Term {
	names := slices.Clone(model.QuarantineReasons)
	for _, r := range slices.Sorted(maps.Keys(by)) {
		if !slices.Contains(model.QuarantineReasons, r) {
			names = append(names, r)
		}
	}
	return slicesx.Map(names, func(r string) metrics.Term { return metrics.Term{Name: r, Value: by[r]} })
}

// auditTables are the audit tables' row counts, by table name (SPEC §5).
func auditTables(a sink.AuditCounts) []metrics.Term {
	return []metrics.Term{{Name: "too_late_events", Value: a.TooLate}, {Name: "conflict_events", Value: a.Conflicts},
		{Name: "quarantined_events", Value: a.Quarantined}}
}

// noWriteTimes: a report's histories carry no write times.
func noWriteTimes(model.Row) (time.Time, bool) { return time.Time{}, false }

// stateClass is a state badge's CSS class, from a fixed set: safe in an attribute.
func stateClass(state string) string {
	if c := strings.ToLower(strings.ReplaceAll(state, "_", "")); slices.Contains([]string{"early", "ontime", "late", "final"}, c) {
		return c
	}
	return "unknown"
}

// fmtWall renders a wall-clock instant in UTC.
func fmtWall(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// fmtEventTime renders an event time or watermark, "—" for none.
func fmtEventTime(ms int64) string {
	if ms == model.NoWatermark {
		return "—"
	}
	return model.FormatTime(ms)
}

// fmtWindow renders [start, end), the end's date left out on the same day or its midnight.
func fmtWindow(start, end int64) string {
	s, e := time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()
	layout, clock := "2006-01-02 15:04", "15:04"
	if start%60_000 != 0 || end%60_000 != 0 {
		layout, clock = "2006-01-02 15:04:05.000", "15:04:05.000"
	}
	endLayout := layout
	nextMidnight := s.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if s.YearDay() == e.YearDay() && s.Year() == e.Year() || e.Equal(nextMidnight) {
		endLayout = clock
	}
	return "[" + s.Format(layout) + ", " + e.Format(endLayout) + ")"
}

// Delay renders a delay in ms compactly: 0s, 42s, 4m12s, 3h05m, 2d04h.
func Delay(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int64(d/(24*time.Hour)), int64(d%(24*time.Hour)/time.Hour))
}

// share is part/whole in percent with one decimal, "" for an empty whole.
func share(part, whole int64) string {
	if whole == 0 {
		return ""
	}
	if part > 0 && 1000*part < whole {
		return "<0.1%" // not "0.0%": something is there
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + "%"
}

// Count renders an integer with thousands separators, as every form does.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
