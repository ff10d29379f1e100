package transforms

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/revenue-stream/hourly/model"
)

// TestDirtyKeysTickOncePerPeriod drives one bucket of the clock-driven EARLY
// refresh (dirtyKeysFn) in plain Go: a key that got data since the last
// tick gets exactly one tick at the next tick (the bound: an EARLY row at
// most one --early period after its data), stamped with the earliest event
// time that made any of the bucket's keys due, so that it sorts before the
// keys' ON_TIME timers; a tick with nothing due emits nothing.
func TestDirtyKeysTickOncePerPeriod(t *testing.T) {
	f := &dirtyKeysFn{Dirty: state.MakeBagState[string]("dirty"), Since: state.MakeValueState[int64]("since")}
	sp := &memShard{memState{values: map[string]any{}}, map[string][]any{}}
	type tick struct {
		at  beam.EventTime
		key string
	}
	var got []tick
	emit := func(at beam.EventTime, key string, d model.Delta) {
		if !d.Tick {
			t.Fatalf("a non-tick delta for %s", key)
		}
		got = append(got, tick{at, key})
	}
	feed := func(at beam.EventTime, key string) {
		t.Helper()
		if err := f.ProcessElement(context.Background(), at, sp, 0, key, emit); err != nil {
			t.Fatal(err)
		}
	}
	const now = beam.EventTime(1_796_000_000_000) // the clock's time, far ahead of the data
	ten, tenFifty, eleven := beam.EventTime(at("2026-11-04T10:15:00Z")), beam.EventTime(at("2026-11-04T10:50:00Z")), beam.EventTime(at("2026-11-04T11:20:00Z"))

	feed(now, "") // nothing due yet
	if len(got) != 0 {
		t.Fatalf("a tick with nothing due emitted %v", got)
	}
	feed(eleven, "k11")
	feed(ten, "k10")
	feed(eleven, "k11") // a second delta for a due key: still one tick
	feed(now+1000, "")
	slices.SortFunc(got, func(a, b tick) int { return strings.Compare(a.key, b.key) })
	if want := []tick{{ten, "k10"}, {ten, "k11"}}; !slices.Equal(got, want) {
		t.Fatalf("first tick emitted %v, want %v (one per due key, stamped with the earliest due event time)", got, want)
	}
	got = nil
	feed(now+2000, "") // nothing new since: nothing
	if len(got) != 0 {
		t.Fatalf("a tick after a tick emitted %v", got)
	}
	feed(tenFifty, "k10")
	feed(now+3000, "")
	if want := []tick{{tenFifty, "k10"}}; !slices.Equal(got, want) {
		t.Fatalf("third tick emitted %v, want %v (the stamp starts anew after each tick)", got, want)
	}
}
