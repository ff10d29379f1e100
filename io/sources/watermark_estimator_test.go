package sources

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/revenue-stream/hourly/model"
)

func TestWatermarkEstimator(t *testing.T) {
	e := NewWatermarkEstimator(model.NoWatermark)
	if got := mtime.FromTime(e.CurrentWatermark()); got != mtime.MinTimestamp {
		t.Fatalf("initial watermark %v, want the minimum timestamp", got)
	}
	e.Advance(1_000)
	e.Advance(500) // never decreases
	if e.Value() != 1_000 || mtime.FromTime(e.CurrentWatermark()) != mtime.Time(1_000) {
		t.Errorf("watermark %d / %v, want 1000", e.Value(), e.CurrentWatermark())
	}
	// A residual resumes from the state.
	if r := NewWatermarkEstimator(e.Value()); r.Value() != 1_000 {
		t.Errorf("restored %d", r.Value())
	}
	if ToMtime(int64(mtime.MaxTimestamp)+1) != mtime.MaxTimestamp || ToMtime(int64(mtime.MinTimestamp)-1) != mtime.MinTimestamp {
		t.Error("ToMtime does not clamp")
	}
}

func TestBoard(t *testing.T) {
	b := &board{sources: map[string]map[string]*boardEntry{}}
	const stale = 60_000
	b.register("s", []string{"p0", "p1"}, 0)
	b.update("s", "p0", 5_000, 100, false)
	if w, ok := b.min("s", 100, stale); !ok || w != model.NoWatermark {
		t.Fatalf("min = %d %v: p1 has not run and must hold the minimum", w, ok)
	}
	b.update("s", "p1", 3_000, 200, false)
	b.update("s", "p0", 4_000, 300, false) // never decreases
	if w, _ := b.min("s", 300, stale); w != 3_000 {
		t.Errorf("min = %d, want 3000", w)
	}
	b.register("s", []string{"p0", "p1"}, 400) // a second DoFn instance: no reset
	if w, _ := b.min("s", 400, stale); w != 3_000 {
		t.Errorf("min after re-register = %d", w)
	}
	// A finished partition is at the end of time: it leaves the minimum.
	b.finish("s", "p1")
	if w, _ := b.min("s", 400, stale); w != 5_000 {
		t.Errorf("min after finish = %d, want 5000", w)
	}
	// An entry nobody refreshes (processed on another worker) stops counting.
	b.register("s", []string{"p2"}, 400)
	if w, _ := b.min("s", 400, stale); w != model.NoWatermark {
		t.Errorf("fresh p2 not counted: %d", w)
	}
	b.update("s", "p0", 6_000, 400+stale, false)
	if w, _ := b.min("s", 401+stale, stale); w != 6_000 {
		t.Errorf("stale p2 still counted: %d", w)
	}
	// The active others of a partition: not itself, not finished, stale or
	// idle (what --idle-advance looks at).
	if w, ok := b.active("s", "p2", 401+stale, stale); !ok || w != 6_000 {
		t.Errorf("active others of p2 = %d %v, want p0's 6000", w, ok)
	}
	if _, ok := b.active("s", "p0", 401+stale, stale); ok {
		t.Error("p0 sees an active other partition; p1 is finished and p2 stale")
	}
	b.update("s", "p0", 6_000, 402+stale, true)
	if _, ok := b.active("s", "p2", 402+stale, stale); ok {
		t.Error("an idle partition counts as active")
	}
	if _, ok := b.min("other", 0, stale); ok {
		t.Error("unknown source has a minimum")
	}
}
