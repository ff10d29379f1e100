package reconcile_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func TestCompare(t *testing.T) {
	h := func(hour int) int64 { return time.Date(2026, 11, 4, hour, 0, 0, 0, time.UTC).UnixMilli() }
	final := func(hour int, revenue, count int64) model.Row {
		return model.Row{WindowStart: h(hour), WindowEnd: h(hour + 1), Dims: "{}", RevenueMicros: revenue, EventCount: count, Revision: 2, State: model.Final}
	}
	key := func(hour int) reconcile.Key { return reconcile.Key{WindowStart: h(hour), Dims: "{}"} }
	policy := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	in := reconcile.CompareInput{
		Recomputed: map[reconcile.Key]reconcile.Totals{
			key(1):                                 {RevenueMicros: 100, Count: 1},                                            // equal
			key(2):                                 {RevenueMicros: 150, Count: 2, TooLateRevenueMicros: 50, TooLateCount: 1}, // too_late
			key(3):                                 {RevenueMicros: 150, Count: 2, TooLateRevenueMicros: 40, TooLateCount: 1}, // unexplained
			key(4):                                 {RevenueMicros: 30, Count: 1, TooLateRevenueMicros: 30, TooLateCount: 1},  // missing, closed
			key(5):                                 {RevenueMicros: 105, Count: 1},                                            // within tolerance
			key(6):                                 {RevenueMicros: 7, Count: 1},                                              // open: LATE row
			key(9):                                 {RevenueMicros: 9, Count: 1},                                              // open: no row, not closed
			{WindowStart: h(1), Dims: `{"c":"x"}`}: {RevenueMicros: 1, Count: 1},                                              // missing dims key, its event counted: lost
			key(7):                                 {RevenueMicros: 70, Count: 2, TooLateRevenueMicros: 70, TooLateCount: 2},  // too_late: the FINAL row holds none of it
		},
		Rows: []model.Row{
			final(1, 100, 1), final(2, 100, 1), final(3, 100, 1), final(5, 100, 1),
			{WindowStart: h(6), WindowEnd: h(7), Dims: "{}", RevenueMicros: 5, EventCount: 1, Revision: 1, State: model.Late},
			final(7, 0, 0),
			final(8, 10, 1), // no raw events: outside the default scope
		},
		CompareSettings: reconcile.CompareSettings{Triggers: policy, ToleranceMicros: 5},
		FinalHorizon:    h(9), // FINAL rows up to window_end 09:00
		HasHorizon:      true,
	}
	c := reconcile.Compare(in)
	var got []string
	for _, d := range c.Diffs {
		got = append(got, fmt.Sprintf("%s %s material=%v delta=%d/%d", d.Key, d.Classification, d.Material, d.DeltaMicros(), d.DeltaCount()))
	}
	want := []string{
		`2026-11-04T01:00:00Z {"c":"x"} unexplained material=true delta=1/1`,
		"2026-11-04T02:00:00Z {} too_late material=true delta=50/1",
		"2026-11-04T03:00:00Z {} unexplained material=true delta=50/1",
		"2026-11-04T04:00:00Z {} missing_window material=true delta=30/1",
		"2026-11-04T05:00:00Z {} unexplained material=false delta=5/0",
		"2026-11-04T07:00:00Z {} too_late material=true delta=70/2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("diffs:\n got %q\nwant %q", got, want)
	}
	if c.Checked != 7 || c.OpenChecked != 2 || len(c.Open) != 2 || len(c.Material()) != 5 {
		t.Errorf("checked %d, open %d (%d differing), material %d; want 7, 2 (2), 5", c.Checked, c.OpenChecked, len(c.Open), len(c.Material()))
	}
	// |delta_micros| 1 + 50 + 50 + 30 + 5 + 70, |delta count| 1 + 1 + 1 + 1 + 0 + 2.
	wantMetrics := map[string]int64{
		"windows_compared": 7, "windows_differing": 6, "windows_differing_too_late": 2, "windows_differing_missing_window": 1,
		"windows_differing_unexplained": 3, "windows_material": 5, "delta_micros_abs": 206, "delta_count_abs": 6,
		"open_windows_compared": 2, "open_windows_differing": 2, "sink_rows_unreadable": 0,
	}
	if got := c.Metrics(); !maps.Equal(got, wantMetrics) {
		t.Errorf("metrics:\n got %v\nwant %v", got, wantMetrics)
	}

	// An unreadable row is reported, and its key is not compared (its
	// stored total is unknown); one outside the scope is not reported.
	in.Unreadable = []reconcile.Unreadable{
		{Table: "hourly_revenue", WindowStart: "2026-11-04T03:00:00Z", Dims: "{}", Column: "revenue", Reason: `bad amount "1x"`},
		{Table: "hourly_revenue", WindowStart: "2026-11-04T08:00:00Z", Dims: "{}", Column: "revenue", Reason: `bad amount "1x"`},
	}
	if u := reconcile.Compare(in); len(u.Unreadable) != 1 || u.Unreadable[0] != in.Unreadable[0] || len(u.Diffs) != 5 || u.Checked != 6 ||
		u.Metrics()["sink_rows_unreadable"] != 1 {
		t.Errorf("unreadable 03:00: reported %v, %d diffs, %d checked; want the 03:00 row only, 5 diffs, 6 checked", u.Unreadable, len(u.Diffs), u.Checked)
	}
	in.Unreadable = nil

	// Without a FINAL row the stream has closed nothing: a missing row is
	// still to come.
	in.HasHorizon = false
	if c = reconcile.Compare(in); c.OpenChecked != 4 || c.Checked != 5 {
		t.Errorf("no FINAL horizon: %d open, %d checked; want 4 (the LATE row and the 3 missing ones), 5", c.OpenChecked, c.Checked)
	}
	// A FINAL row for the window ending at 10:00 closes 09:00.
	in.HasHorizon, in.FinalHorizon = true, h(10)
	if c = reconcile.Compare(in); c.OpenChecked != 1 {
		t.Errorf("horizon 10:00: %d open, want 1 (the LATE row)", c.OpenChecked)
	}

	// An explicit range checks the sink's rows without raw events too.
	in.Range = reconcile.Range{From: h(8), To: h(9), HasFrom: true, HasTo: true}
	c = reconcile.Compare(in)
	if len(c.Diffs) != 1 || c.Diffs[0].Classification != reconcile.ClassUnexplained || c.Diffs[0].DeltaCount() != -1 {
		t.Errorf("range [08:00, 09:00): diffs %+v, want the 08:00 row unexplained", c.Diffs)
	}
	if len(c.Held()) != 1 || c.Diffs[0].Applicable() {
		t.Errorf("the 08:00 row has no raw events: held %v, applicable %v; want it held back from --apply", c.Held(), c.Diffs[0].Applicable())
	}
}

func TestCorrections(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	diffs := []reconcile.Diff{
		{Key: reconcile.Key{WindowStart: 0, Dims: "{}"}, HasRow: true, Streamed: model.Row{Revision: 4, EventCount: 9},
			Recomputed: reconcile.Totals{RevenueMicros: 5, Count: 2}, Material: true, InLog: true},
		{Key: reconcile.Key{WindowStart: 3_600_000, Dims: "{}"}, Recomputed: reconcile.Totals{RevenueMicros: 1, Count: 1}, Material: true, InLog: true},
		{Key: reconcile.Key{WindowStart: 7_200_000, Dims: "{}"}, HasRow: true, Streamed: model.Row{Revision: 2}, Material: false, InLog: true},
		// Held back: emptying a window the raw log does not have.
		{Key: reconcile.Key{WindowStart: 10_800_000, Dims: "{}"}, HasRow: true, Streamed: model.Row{Revision: 2, EventCount: 3}, Material: true},
	}
	got := reconcile.Corrections(diffs, p, "r1")
	want := []model.Row{
		{WindowStart: 0, WindowEnd: 3_600_000, Dims: "{}", RevenueMicros: 5, EventCount: 2, Revision: 5, State: model.Final, Writer: "reconcile:r1"},
		{WindowStart: 3_600_000, WindowEnd: 7_200_000, Dims: "{}", RevenueMicros: 1, EventCount: 1, Revision: 1, State: model.Final, Writer: "reconcile:r1"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Corrections:\n got %+v\nwant %+v", got, want)
	}
}
