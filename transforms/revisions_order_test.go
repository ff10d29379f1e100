package transforms

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

// recordTimers records the timers a DoFn sets, by tag.
type recordTimers struct{ set map[string]timers.TimerMap }

func (r *recordTimers) Set(t timers.TimerMap) {
	if r.set == nil {
		r.set = map[string]timers.TimerMap{}
	}
	r.set[t.Tag] = t
}

// TestLateDeltaFirstWaitsForTheOnTimeTimer: the revision step takes C's
// late delta before A and B's on-time one (their dedup shards fired their
// timers in that order), as in CI on 01dc6ce. The first delta sets the
// ON_TIME timer even though it is late, nothing is written until it fires,
// and then ON_TIME 150 and LATE 170 come in that order. Before, C was
// counted at once: LATE 20 as revision 1 and no ON_TIME row.
func TestLateDeltaFirstWaitsForTheOnTimeTimer(t *testing.T) {
	ctx := context.Background()
	start := at("2026-11-04T10:00:00Z")
	key := WindowKey(start, "{}")
	f := &revisionsFn{Policy: rollbackPolicy, State: state.MakeValueState[[]byte]("window"), Firing: timers.InEventTime("firing")}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	sp := &memState{values: map[string]any{}}
	var rows []model.Row
	emit := func(r model.Row) { rows = append(rows, r) }
	tp := &recordTimers{}
	for _, d := range []model.Delta{{RevenueMicros: 20e6, Count: 1, AfterEnd: true}, {RevenueMicros: 150e6, Count: 2}} {
		if err := f.ProcessElement(ctx, sp, tp, key, d, emit); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) != 0 {
		t.Fatalf("rows before the ON_TIME timer: %+v", rows)
	}
	end := rollbackPolicy.WindowEnd(start)
	if tm, ok := tp.set[tagOnTime]; !ok || tm.FireTimestamp.Milliseconds() != end {
		t.Fatalf("ON_TIME timer %+v (set %v), want one at the window end %d", tm, ok, end)
	}
	if err := f.OnTimer(ctx, sp, tp, key, timers.Context{Family: "firing", Tag: tagOnTime}, emit); err != nil {
		t.Fatal(err)
	}
	row := func(micros, n, rev int64, st model.ResultState) model.Row {
		return model.Row{WindowStart: start, WindowEnd: end, Dims: "{}", RevenueMicros: micros, EventCount: n, Revision: rev, State: st, Writer: "stream"}
	}
	if want := []model.Row{row(150e6, 2, 1, model.OnTime), row(170e6, 3, 2, model.Late)}; !slices.Equal(rows, want) {
		t.Fatalf("rows = %+v\nwant %+v", rows, want)
	}
}

// A window state written before late data was held apart (no held fields:
// a job restored from an older version's checkpoint) decodes with none
// held; the current encoding round-trips what is held.
func TestWindowStateDecodesTheOlderEncoding(t *testing.T) {
	w := &triggers.WindowState{Start: 0, End: 3600000, Dims: "{}", RevenueMicros: 150e6, Count: 2, OnTimeDone: false, HeldLateMicros: 20e6, HeldLateCount: 1}
	b := encodeWindow(w)
	got, err := decodeWindow(b)
	if err != nil || *got != *w {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, w)
	}
	old := encodeWindow(&triggers.WindowState{Start: 0, End: 3600000, Dims: "{}", RevenueMicros: 150e6, Count: 2})
	old = old[:len(old)-2] // the two zero varints the older encoding lacks
	got, err = decodeWindow(old)
	if err != nil || got.RevenueMicros != 150e6 || got.Count != 2 || got.HeldLateCount != 0 {
		t.Fatalf("older encoding: %+v, %v", got, err)
	}
}
