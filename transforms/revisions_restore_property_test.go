package transforms

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/model"
)

// A step of a revision-step timeline: a delta, an EARLY tick, or a firing.
type timelineStep struct {
	kind   string // "add", "tick", tagOnTime, tagFinal
	micros int64
	n      int64
	late   bool
}

// memSink keeps a key's current row by revision, as the sinks do.
type memSink struct {
	current   map[string]model.Row
	changelog []model.Row
	stale     int
}

func (s *memSink) write(r model.Row) {
	k := WindowKey(r.WindowStart, r.Dims)
	if c, ok := s.current[k]; ok && c.Revision >= r.Revision {
		s.stale++
		return
	}
	s.current[k] = r
	s.changelog = append(s.changelog, r)
}

func runTimeline(t *testing.T, f *revisionsFn, sp *memState, key string, steps []timelineStep, s *memSink) {
	t.Helper()
	ctx, emit := context.Background(), s.write
	for _, st := range steps {
		var err error
		switch st.kind {
		case "add":
			err = f.ProcessElement(ctx, sp, noTimers{}, key, model.Delta{RevenueMicros: st.micros, Count: st.n, AfterEnd: st.late}, emit)
		case "tick":
			err = f.ProcessElement(ctx, sp, noTimers{}, key, model.Delta{Tick: true}, emit)
		default:
			err = f.OnTimer(ctx, sp, noTimers{}, key, timers.Context{Family: "firing", Tag: st.kind}, emit)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestRevisionsAcrossARestore: random timelines of one key (on-time data and
// EARLY ticks, late data before and after the ON_TIME moment, FINAL), each
// failing at a random point after a random checkpoint; the restored step
// (the checkpoint's state, seeded with the sink's rows) re-reads the rest
// bundled otherwise, and half the time with the ON_TIME moment elsewhere and
// some stamps changed (partitions ahead of the pipeline watermark). The
// sink must end at FINAL with every event, take every row offered (no
// revision reissued), never dip or go back along the changelog, and a window
// with an EARLY row must get an ON_TIME row.
func TestRevisionsAcrossARestore(t *testing.T) {
	key := WindowKey(at("2026-11-04T10:00:00Z"), "{}")
	for seed := uint64(0); seed < 5000; seed++ {
		r := rand.New(rand.NewPCG(seed, 41))
		var steps, lates []timelineStep
		var micros, events int64
		event := func(late bool) timelineStep {
			m := int64(r.IntN(5)+1) * 1e6
			micros, events = micros+m, events+1
			return timelineStep{kind: "add", micros: m, n: 1, late: late}
		}
		for range r.IntN(4) {
			steps = append(steps, event(false))
			if r.IntN(2) == 0 {
				steps = append(steps, timelineStep{kind: "tick"})
			}
		}
		for range r.IntN(4) {
			lates = append(lates, event(true))
		}
		if events == 0 {
			continue
		}
		split := r.IntN(len(lates) + 1)
		steps = append(append(append(steps, lates[:split]...), timelineStep{kind: tagOnTime}), lates[split:]...)
		steps = append(steps, timelineStep{kind: tagFinal})

		sink := &memSink{current: map[string]model.Row{}}
		step := func() *revisionsFn { // Setup reads the sink
			f := &revisionsFn{Policy: rollbackPolicy, State: state.MakeValueState[[]byte]("window"), Firing: timers.InEventTime("firing")}
			if err := f.Setup(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.published = maps.Clone(sink.current)
			return f
		}
		checkpoint := r.IntN(len(steps) + 1)
		fail := checkpoint + r.IntN(len(steps)-checkpoint+1)
		sp, first := &memState{values: map[string]any{}}, step()
		runTimeline(t, first, sp, key, steps[:checkpoint], sink)
		restored := sp.snapshot()
		runTimeline(t, first, sp, key, steps[checkpoint:fail], sink)

		var again []timelineStep // the rest, bundled otherwise
		for _, st := range steps[checkpoint:] {
			if n := len(again); st.kind == "add" && n > 0 && again[n-1].kind == "add" && again[n-1].late == st.late && r.IntN(2) == 0 {
				again[n-1].micros += st.micros
				again[n-1].n += st.n
				continue
			}
			if st.kind == "tick" && r.IntN(2) == 0 {
				continue
			}
			again = append(again, st)
		}
		if r.IntN(2) == 0 {
			if i := slices.IndexFunc(again, func(s timelineStep) bool { return s.kind == tagOnTime }); i >= 0 {
				again = slices.Delete(again, i, i+1)
				again = slices.Insert(again, r.IntN(len(again)), timelineStep{kind: tagOnTime})
			}
			for i := range again {
				if again[i].kind == "add" && r.IntN(3) == 0 {
					again[i].late = !again[i].late
				}
			}
		}
		runTimeline(t, step(), restored, key, again, sink)

		desc := fmt.Sprintf("seed %d: %+v, checkpoint %d, failure %d, restored %+v\nchangelog %+v", seed, steps, checkpoint, fail, again, sink.changelog)
		if cur := sink.current[key]; cur.State != model.Final || cur.EventCount != events || cur.RevenueMicros != micros {
			t.Fatalf("current row %+v, want FINAL %d micros of %d events\n%s", cur, micros, events, desc)
		}
		if sink.stale != 0 {
			t.Fatalf("%d rows refused as stale\n%s", sink.stale, desc)
		}
		for i := 1; i < len(sink.changelog); i++ {
			if a, b := sink.changelog[i-1], sink.changelog[i]; b.EventCount < a.EventCount || b.State < a.State {
				t.Fatalf("%+v after %+v\n%s", b, a, desc)
			}
		}
		state := func(st model.ResultState) func(model.Row) bool {
			return func(r model.Row) bool { return r.State == st }
		}
		if slices.ContainsFunc(sink.changelog, state(model.Early)) && !slices.ContainsFunc(sink.changelog, state(model.OnTime)) {
			t.Fatalf("an EARLY row and no ON_TIME row\n%s", desc)
		}
	}
}
