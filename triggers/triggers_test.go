package triggers

import (
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

var ms = rowtest.MS

var hourly = Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour}

func TestWindowsAreUTCAlignedHalfOpen(t *testing.T) {
	cases := []struct{ ts, start string }{
		{"2026-11-04T10:00:00Z", "2026-11-04T10:00:00Z"},
		{"2026-11-04T10:59:59.999Z", "2026-11-04T10:00:00Z"},
		{"2026-11-04T11:00:00Z", "2026-11-04T11:00:00Z"},
		{"1969-12-31T23:30:00Z", "1969-12-31T23:00:00Z"},
	}
	for _, c := range cases {
		if got := hourly.WindowStart(ms(c.ts)); got != ms(c.start) {
			t.Errorf("WindowStart(%s) = %s, want %s", c.ts, model.FormatTime(got), c.start)
		}
	}
}

func TestClosedBoundary(t *testing.T) {
	start := ms("2026-11-04T10:00:00Z")
	if hourly.Closed(start, ms("2026-11-05T10:59:59.999Z")) {
		t.Error("closed 1 ms before end + lateness")
	}
	if !hourly.Closed(start, ms("2026-11-05T11:00:00Z")) {
		t.Error("not closed at end + lateness")
	}
	if hourly.Closed(start, model.NoWatermark) {
		t.Error("an unknown watermark closed a window")
	}
	zero := Policy{Window: 5 * time.Minute}
	if !zero.Closed(ms("2026-11-04T07:40:00Z"), ms("2026-11-04T07:51:40Z")) {
		t.Error("Spark demo: 07:40 window not closed at watermark 07:51:40 with lateness 0")
	}
}

func TestPolicyValidate(t *testing.T) {
	bad := []Policy{
		{Window: 0, AllowedLateness: time.Hour},
		{Window: 7 * time.Minute},
		{Window: time.Hour, Early: -time.Second},
		{Window: time.Hour, AllowedLateness: -time.Second},
	}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if err := hourly.Validate(); err != nil {
		t.Error(err)
	}
}

// The minimal sequence of SPEC §7 through the rule book alone.
func TestWindowStateMinimalSequence(t *testing.T) {
	w := &WindowState{Start: ms("2026-11-04T10:00:00Z"), End: ms("2026-11-04T11:00:00Z"), Dims: "{}"}
	type step struct {
		name string
		do   func() (model.Row, bool)
		want *model.Row
	}
	add := func(rev, n int64, after bool) func() (model.Row, bool) {
		return func() (model.Row, bool) {
			return one(t, w, rev, n, after)
		}
	}
	row := func(rev, n, revision int64, st model.ResultState) *model.Row {
		return &model.Row{WindowStart: w.Start, WindowEnd: w.End, Dims: "{}", RevenueMicros: rev * 1e6, EventCount: n, Revision: revision, State: st, Writer: "stream"}
	}
	steps := []step{
		{"A", add(100e6, 1, false), nil},
		{"early tick", w.Tick, row(100, 1, 1, model.Early)},
		{"tick without change", w.Tick, nil},
		{"B", add(50e6, 1, false), nil},
		{"early tick", w.Tick, row(150, 2, 2, model.Early)},
		{"on time", w.OnTime, row(150, 2, 3, model.OnTime)},
		{"tick after on time", w.Tick, nil},
		{"C late", add(20e6, 1, true), row(170, 3, 4, model.Late)},
		{"final", w.Close, row(170, 3, 5, model.Final)},
		{"second close", w.Close, nil},
	}
	for _, s := range steps {
		got, ok := s.do()
		switch {
		case s.want == nil && ok:
			t.Errorf("%s: unexpected row %+v", s.name, got)
		case s.want != nil && (!ok || got != *s.want):
			t.Errorf("%s: got %+v (emitted %v), want %+v", s.name, got, ok, *s.want)
		}
	}
}

// one adds a delta that must give at most one row.
func one(t *testing.T, w *WindowState, rev, n int64, after bool) (model.Row, bool) {
	t.Helper()
	rows, err := w.Add(rev, n, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) > 1 {
		t.Fatalf("Add gave %d rows, want at most one: %+v", len(rows), rows)
	}
	if len(rows) == 0 {
		return model.Row{}, false
	}
	return rows[0], true
}

// Late data that reaches the step before its ON_TIME timer fired (both in
// one bundle) writes the ON_TIME row of what was held first, then LATE
// (CI on 5cb2bdc, position order: LATE 170 as revision 1, no ON_TIME).
func TestLateDataBeforeTheOnTimeTimer(t *testing.T) {
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	if rows, err := w.Add(150e6, 2, false); err != nil || len(rows) != 0 {
		t.Fatalf("on-time data: %+v, %v; want no row", rows, err)
	}
	rows, err := w.Add(20e6, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Row{
		{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: 150e6, EventCount: 2, Revision: 1, State: model.OnTime, Writer: "stream"},
		{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: 170e6, EventCount: 3, Revision: 2, State: model.Late, Writer: "stream"},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows = %+v\nwant %+v", rows, want)
	}
	if r, ok := w.OnTime(); ok {
		t.Fatalf("the ON_TIME timer wrote %+v after the window's ON_TIME and LATE rows", r)
	}
	if r, ok := w.Close(); !ok || r.Revision != 3 || r.State != model.Final || r.EventCount != 3 {
		t.Fatalf("FINAL = %+v (%v), want revision 3 of 3 events", r, ok)
	}
}

func TestFirstDataAfterEndStartsWithLate(t *testing.T) {
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	r, ok := one(t, w, 5e6, 1, true)
	if !ok || r.State != model.Late || r.Revision != 1 {
		t.Fatalf("first row = %+v (%v), want LATE revision 1", r, ok)
	}
	if _, ok := w.OnTime(); ok {
		t.Fatal("ON_TIME written after a LATE row")
	}
}

func TestFinalAlwaysItsOwnRevisionEvenUnchanged(t *testing.T) {
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	w.Add(5e6, 1, false)
	on, _ := w.OnTime()
	fin, ok := w.Close()
	if !ok || fin.Revision != on.Revision+1 || fin.State != model.Final || fin.RevenueMicros != on.RevenueMicros {
		t.Fatalf("FINAL = %+v after %+v", fin, on)
	}
}

func TestRestartSeedNeverDips(t *testing.T) {
	published := model.Row{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: 170e6, EventCount: 3, Revision: 4, State: model.Late}
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}", Published: published, OnTimeDone: true}
	// The replay rebuilds the window: smaller snapshots are not written.
	for i, d := range []int64{100e6, 50e6} {
		if r, ok := one(t, w, d, 1, false); ok {
			t.Fatalf("replay step %d wrote %+v below the published count", i, r)
		}
	}
	if r, ok := one(t, w, 20e6, 1, false); ok {
		t.Fatalf("replay reaching the published snapshot wrote %+v", r)
	}
	r, ok := one(t, w, 30e6, 1, false)
	if !ok || r.Revision != 5 || r.EventCount != 4 || r.State != model.Late {
		t.Fatalf("new data after catching up = %+v (%v), want LATE revision 5 with 4 events", r, ok)
	}
	// FINAL seals what is published even if the replay saw less.
	w2 := &WindowState{Start: 0, End: 3600000, Dims: "{}", Published: published, OnTimeDone: true}
	w2.Add(100e6, 1, false)
	f, ok := w2.Close()
	if !ok || f.EventCount != 3 || f.RevenueMicros != 170e6 || f.Revision != 5 {
		t.Fatalf("FINAL after partial replay = %+v, want the published 170 sealed at revision 5", f)
	}
}

func TestOverflowIsAnError(t *testing.T) {
	w := &WindowState{}
	if _, err := w.Add(1<<62, 1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(1<<62, 1, false); err == nil {
		t.Fatal("int64 overflow not reported")
	}
}
