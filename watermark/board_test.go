package watermark

import (
	"testing"

	"github.com/revenue-stream/hourly/model"
)

func TestBoard(t *testing.T) {
	b := NewBoard()
	const stale = 60_000
	b.Register([]string{"p0", "p1"}, 0)
	b.Update("p0", 5_000, 100, false)
	if w, ok := b.Min(100, stale); !ok || w != model.NoWatermark {
		t.Fatalf("min = %d %v: p1 has not run and must hold the minimum", w, ok)
	}
	b.Update("p1", 3_000, 200, false)
	b.Update("p0", 4_000, 300, false) // never decreases
	if w, _ := b.Min(300, stale); w != 3_000 {
		t.Errorf("min = %d, want 3000", w)
	}
	b.Register([]string{"p0", "p1"}, 400) // a second DoFn instance: no reset
	if w, _ := b.Min(400, stale); w != 3_000 {
		t.Errorf("min after re-register = %d", w)
	}
	// A finished partition is at the end of time: it leaves the minimum.
	b.Finish("p1")
	if w, _ := b.Min(400, stale); w != 5_000 {
		t.Errorf("min after finish = %d, want 5000", w)
	}
	// An entry nobody refreshes (processed on another worker) stops counting.
	b.Register([]string{"p2"}, 400)
	if w, _ := b.Min(400, stale); w != model.NoWatermark {
		t.Errorf("fresh p2 not counted: %d", w)
	}
	b.Update("p0", 6_000, 400+stale, false)
	if w, _ := b.Min(401+stale, stale); w != 6_000 {
		t.Errorf("stale p2 still counted: %d", w)
	}
	// The active others of a partition: not itself, not finished, stale or
	// idle (what --idle-advance looks at).
	if w, ok := b.Active("p2", 401+stale, stale); !ok || w != 6_000 {
		t.Errorf("active others of p2 = %d %v, want p0's 6000", w, ok)
	}
	if _, ok := b.Active("p0", 401+stale, stale); ok {
		t.Error("p0 sees an active other partition; p1 is finished and p2 stale")
	}
	b.Update("p0", 6_000, 402+stale, true)
	if _, ok := b.Active("p2", 402+stale, stale); ok {
		t.Error("an idle partition counts as active")
	}
	if _, ok := NewBoard().Min(0, stale); ok {
		t.Error("an empty board has a minimum")
	}
}

// TestBoardHolds: the partitions whose reading may move the minimum are
// those at it, those with no watermark yet and those not counted.
func TestBoardHolds(t *testing.T) {
	b := NewBoard()
	const stale = 60_000
	b.Register([]string{"p0", "p1"}, 0)
	if !b.Holds("p0", 0, stale) || !b.Holds("p1", 0, stale) {
		t.Fatal("partitions with no watermark yet must hold the minimum")
	}
	b.Update("p0", 5_000, 100, false)
	if b.Holds("p0", 100, stale) || !b.Holds("p1", 100, stale) {
		t.Fatal("p1 has no watermark: it holds the minimum, p0 does not")
	}
	b.Update("p1", 5_000, 200, false)
	if !b.Holds("p0", 200, stale) || !b.Holds("p1", 200, stale) {
		t.Fatal("two partitions at the minimum both hold it")
	}
	b.Update("p1", 7_000, 300, false)
	if !b.Holds("p0", 300, stale) || b.Holds("p1", 300, stale) {
		t.Fatal("p0 alone holds the minimum")
	}
	if !b.Holds("p9", 300, stale) {
		t.Fatal("a partition the board does not know may hold it")
	}
}
