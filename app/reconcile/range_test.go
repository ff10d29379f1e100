package reconcile_test

import (
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		from, to, date string
		want           string // Range.String(), or "error: <substring>"
	}{
		{want: "every window present in the raw log"},
		{from: "2026-11-04T10:00:00Z", to: "2026-11-04T12:00:00Z", want: "[2026-11-04T10:00:00Z, 2026-11-04T12:00:00Z)"},
		{from: "2026-11-04T10:00:00Z", want: "[2026-11-04T10:00:00Z, end)"},
		{to: "2026-11-04T10:00:00Z", want: "[start, 2026-11-04T10:00:00Z)"},
		{from: "2026-11-04T12:00:00+02:00", to: "2026-11-04T11:00:00Z", want: "[2026-11-04T10:00:00Z, 2026-11-04T11:00:00Z)"},
		{date: "2026-11-04", want: "[2026-11-04T00:00:00Z, 2026-11-05T00:00:00Z)"},
		{from: "2026-11-04T10:30:00Z", want: "error: --from"},
		{from: "2026-11-04T10:00:00.001Z", want: "error: not a whole UTC hour"},
		{from: "2026-11-04T10:00:00+05:30", want: "error: not a whole UTC hour"},
		{to: "2026-11-04 10:00", want: "error: --to"},
		{from: "2026-11-04T10:00:00Z", to: "2026-11-04T10:00:00Z", want: "error: must be before"},
		{date: "2026-11-04", from: "2026-11-04T10:00:00Z", want: "error: --date cannot be combined"},
		{date: "04/11/2026", want: "error: --date"},
	} {
		r, err := reconcile.ParseRange(tc.from, tc.to, tc.date)
		got := r.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) && !(strings.HasPrefix(tc.want, "error: ") && strings.Contains(got, strings.TrimPrefix(tc.want, "error: "))) {
			t.Errorf("ParseRange(%q, %q, %q) = %s, want %s", tc.from, tc.to, tc.date, got, tc.want)
		}
	}
	r, _ := reconcile.ParseRange("2026-11-04T10:00:00Z", "2026-11-04T11:00:00Z", "")
	if !r.Contains(r.From) || r.Contains(r.To) || r.Contains(r.From-1) {
		t.Error("a range is [from, to)")
	}
}
