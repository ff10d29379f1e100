package transforms

import (
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/triggers"
)

// TestPublishedRowBelowSeedBound: a key's loaded row seeds it; a window
// before the seed bound is a closed marker even when its row was not loaded
// (the run cannot reach it, SPEC §4 rule (b)); a window at or after the
// bound without a row starts fresh; without a bound nothing is implied.
func TestPublishedRowBelowSeedBound(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	bound := at("2026-11-04T10:00:00Z")
	win := func(start, dims string) *triggers.WindowState {
		s := at(start)
		return &triggers.WindowState{Start: s, End: p.WindowEnd(s), Dims: dims}
	}
	loaded := model.Row{WindowStart: at("2026-11-04T11:00:00Z"), WindowEnd: at("2026-11-04T12:00:00Z"), Dims: "{}",
		RevenueMicros: 5, EventCount: 1, Revision: 2, State: model.OnTime}
	f := &revisionsFn{Policy: p, Bound: sink.SeedBound{Bounded: true, StartFrom: bound},
		published: map[string]model.Row{WindowKey(loaded.WindowStart, loaded.Dims): loaded}}

	w := win("2026-11-04T11:00:00Z", "{}")
	if got, ok := f.publishedRow(WindowKey(w.Start, w.Dims), w); !ok || got != loaded {
		t.Errorf("loaded key: publishedRow = %+v, %v; want %+v", got, ok, loaded)
	}
	w = win("2026-11-04T09:00:00Z", `{"c":"DE"}`)
	want := model.Row{WindowStart: w.Start, WindowEnd: w.End, Dims: w.Dims, State: model.Final}
	if got, ok := f.publishedRow(WindowKey(w.Start, w.Dims), w); !ok || got != want {
		t.Errorf("window before the bound: publishedRow = %+v, %v; want the closed marker %+v", got, ok, want)
	}
	w = win("2026-11-04T10:00:00Z", `{"c":"DE"}`)
	if got, ok := f.publishedRow(WindowKey(w.Start, w.Dims), w); ok {
		t.Errorf("window at the bound without a row: publishedRow = %+v, want none", got)
	}
	f.Bound = sink.SeedBound{}
	w = win("2026-11-04T09:00:00Z", `{"c":"DE"}`)
	if got, ok := f.publishedRow(WindowKey(w.Start, w.Dims), w); ok {
		t.Errorf("no bound: publishedRow = %+v, want none", got)
	}
}
