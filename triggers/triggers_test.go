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
		{"on time", firing(t, w.OnTime), row(150, 2, 3, model.OnTime)},
		{"tick after on time", w.Tick, nil},
		{"C late", add(20e6, 1, true), row(170, 3, 4, model.Late)},
		{"final", firing(t, w.Close), row(170, 3, 5, model.Final)},
		{"second close", firing(t, w.Close), nil},
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
	return atMostOne(t, "Add")(w.Add(rev, n, after))
}

// firing turns a firing (OnTime, Close) that must give at most one row into
// a step.
func firing(t *testing.T, fire func() ([]model.Row, error)) func() (model.Row, bool) {
	return func() (model.Row, bool) {
		t.Helper()
		return atMostOne(t, "firing")(fire())
	}
}

func atMostOne(t *testing.T, what string) func([]model.Row, error) (model.Row, bool) {
	return func(rows []model.Row, err error) (model.Row, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 1 {
			t.Fatalf("%s gave %d rows, want at most one: %+v", what, len(rows), rows)
		}
		if len(rows) == 0 {
			return model.Row{}, false
		}
		return rows[0], true
	}
}

// Late data may reach the step before its ON_TIME moment, and before
// on-time data of the same window: in one bundle with it, or from another
// dedup shard whose boundary timer fired first (CI on 01dc6ce, position
// order: C's delta first, LATE 20 as revision 1, no ON_TIME; on 5cb2bdc
// LATE 170 as revision 1). In every order of A and B (on time) and C
// (late), nothing is written until the ON_TIME moment, which writes ON_TIME
// 150 and then LATE 170. (Counting C at once, as before, fails the orders
// that start with C, and the order A, C, B wrote ON_TIME 100.)
func TestLateDataBeforeTheOnTimeMoment(t *testing.T) {
	type delta struct {
		name   string
		micros int64
		late   bool
	}
	a, b, c := delta{"A", 100e6, false}, delta{"B", 50e6, false}, delta{"C", 20e6, true}
	row := func(micros, n, rev int64, st model.ResultState) model.Row {
		return model.Row{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: micros, EventCount: n, Revision: rev, State: st, Writer: "stream"}
	}
	for _, order := range [][]delta{{a, b, c}, {a, c, b}, {c, a, b}, {c, b, a}, {b, c, a}, {b, a, c}} {
		name := order[0].name + order[1].name + order[2].name
		w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
		for _, d := range order {
			if r, ok := one(t, w, d.micros, 1, d.late); ok {
				t.Errorf("%s: %s wrote %+v before the ON_TIME moment", name, d.name, r)
			}
		}
		rows, err := w.OnTime()
		if err != nil {
			t.Fatal(err)
		}
		if want := []model.Row{row(150e6, 2, 1, model.OnTime), row(170e6, 3, 2, model.Late)}; !slices.Equal(rows, want) {
			t.Errorf("%s: ON_TIME moment wrote %+v\nwant %+v", name, rows, want)
		}
		if rows, _ := w.OnTime(); len(rows) != 0 {
			t.Errorf("%s: a second ON_TIME moment wrote %+v", name, rows)
		}
		if r, ok := firing(t, w.Close)(); !ok || r != row(170e6, 3, 3, model.Final) {
			t.Errorf("%s: FINAL = %+v (%v), want revision 3 of 3 events", name, r, ok)
		}
	}
}

// A window whose first data is late starts with a LATE row, at the ON_TIME
// moment; so does late data held when the window closes with zero lateness
// (FINAL's firing runs ON_TIME's first).
func TestFirstDataAfterEndStartsWithLate(t *testing.T) {
	late := model.Row{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: 5e6, EventCount: 1, Revision: 1, State: model.Late, Writer: "stream"}
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	if r, ok := one(t, w, 5e6, 1, true); ok {
		t.Fatalf("late data wrote %+v before the ON_TIME moment", r)
	}
	if r, ok := firing(t, w.OnTime)(); !ok || r != late {
		t.Fatalf("first row = %+v (%v), want %+v", r, ok, late)
	}

	w = &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	one(t, w, 5e6, 1, true)
	rows, err := w.Close()
	final := late
	final.Revision, final.State = 2, model.Final
	if err != nil || !slices.Equal(rows, []model.Row{late, final}) {
		t.Fatalf("close with late data held: %+v, %v; want LATE then FINAL", rows, err)
	}
}

func TestFinalAlwaysItsOwnRevisionEvenUnchanged(t *testing.T) {
	w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
	w.Add(5e6, 1, false)
	on, _ := firing(t, w.OnTime)()
	fin, ok := firing(t, w.Close)()
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
	f, ok := firing(t, w2.Close)()
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

// TestOnTimeAfterAnAdoptedEarlyRow: a restored or restarted step adopts the
// sink's EARLY row (150 of 2 events, revision 2) while its own snapshot holds
// less: the data behind that row had reached it before window_end in the
// earlier timeline, but comes after the ON_TIME moment in this one (a
// partition ahead of the others: its events' timestamps do not hold the
// watermark before window_end). The ON_TIME moment still writes ON_TIME,
// carrying the published snapshot as FINAL does (never a dip), and the data
// catching up writes nothing until it has more to say. Before, ON_TIME was
// silent (a dip), the catching up was a silent LATE relabel, and the window's
// current row stayed EARLY for the whole allowed lateness, with no ON_TIME
// row ever; with no data yet at the ON_TIME moment (the key's first delta
// late and held), ON_TIME was skipped as for a window without data.
func TestOnTimeAfterAnAdoptedEarlyRow(t *testing.T) {
	row := func(micros, n, rev int64, st model.ResultState) model.Row {
		return model.Row{WindowStart: 0, WindowEnd: 3600000, Dims: "{}", RevenueMicros: micros, EventCount: n, Revision: rev, State: st, Writer: "stream"}
	}
	early := row(150e6, 2, 2, model.Early)
	for _, c := range []struct {
		name   string
		before []int64 // deltas (micros, one event each) before the ON_TIME moment: on time, then one late
		late   bool    // the last of before is late (held)
		want   []model.Row
	}{
		{"on-time data below the EARLY row", []int64{100e6}, false,
			[]model.Row{row(150e6, 2, 3, model.OnTime)}},
		{"only late data held", []int64{50e6}, true,
			[]model.Row{row(150e6, 2, 3, model.OnTime)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &WindowState{Start: 0, End: 3600000, Dims: "{}"}
			if !w.Adopt(early) {
				t.Fatal("EARLY row not adopted")
			}
			for i, m := range c.before {
				if r, ok := one(t, w, m, 1, c.late && i == len(c.before)-1); ok {
					t.Fatalf("delta %d wrote %+v before the ON_TIME moment", i, r)
				}
			}
			rows, err := w.OnTime()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rows, c.want) {
				t.Fatalf("ON_TIME moment wrote %+v\nwant %+v", rows, c.want)
			}
			// The rest of the EARLY row's data catches up: nothing new to say.
			rest := 150e6 - c.before[0]
			if r, ok := one(t, w, int64(rest), 1, true); ok {
				t.Errorf("catching up wrote %+v", r)
			}
			if r, ok := one(t, w, 20e6, 1, true); !ok || r != row(170e6, 3, 4, model.Late) {
				t.Errorf("new late data = %+v (%v), want LATE 170 of 3 at revision 4", r, ok)
			}
			if r, ok := firing(t, w.Close)(); !ok || r != row(170e6, 3, 5, model.Final) {
				t.Errorf("FINAL = %+v (%v), want 170 of 3 at revision 5", r, ok)
			}
		})
	}
}
