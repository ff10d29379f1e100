package flow

import (
	"testing"
	"time"
)

func TestReadAheadRoom(t *testing.T) {
	now := time.Unix(1000, 0)
	key := "ra-" + Token(8)
	defer ReleaseReadAhead(key)
	a := ReadAheadOf(key)
	a.now = func() time.Time { return now }
	a.lastTaken.Store(now.UnixMilli())
	if ReadAheadOf(key) != a {
		t.Fatal("one key, two accounts")
	}

	const budget, call = 10_000, 2_000
	if !a.Room(budget, call, false) {
		t.Fatal("an empty account has no room")
	}
	a.Queued(8_000)
	if !a.Room(budget, call, false) {
		t.Fatal("8,000 waiting: a call of 2,000 fits a budget of 10,000")
	}
	a.Queued(1)
	if a.Room(budget, call, false) {
		t.Fatal("8,001 waiting: a call of 2,000 does not fit")
	}
	a.Taken(1_001)
	if !a.Room(budget, call, false) || a.Ahead() != 7_000 || a.Peak() != 8_001 {
		t.Fatalf("after taking 1,001: room %v, ahead %d, peak %d", a.Room(budget, call, false), a.Ahead(), a.Peak())
	}
	if !a.Room(0, call, false) {
		t.Fatal("a zero budget bounds nothing")
	}
	var none *ReadAhead
	none.Queued(5)
	none.Taken(5)
	if !none.Room(1, 1, false) || none.Ahead() != 0 || ReadAheadOf("") != nil {
		t.Fatal("no account must bound nothing")
	}
}

// TestReadAheadBlocked: when no call fits and the dedup step has taken
// nothing for Blocked (what waits is held behind the watermark), a
// partition holding the watermark reads on past the budget, each such call
// counted, until the dedup step takes records again; the other partitions
// keep waiting throughout.
func TestReadAheadBlocked(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &ReadAhead{now: func() time.Time { return now }}
	a.lastTaken.Store(now.UnixMilli())
	a.Queued(50)
	if a.Room(40, 10, true) || a.Room(40, 10, false) {
		t.Fatal("over budget, the dedup step just took: no room")
	}
	now = now.Add(Blocked - time.Millisecond)
	if a.Room(40, 10, true) {
		t.Fatal("room one millisecond before Blocked")
	}
	now = now.Add(time.Millisecond)
	if a.Room(40, 10, false) {
		t.Fatal("a partition that does not hold the watermark read past the budget")
	}
	if !a.Room(40, 10, true) || !a.Room(40, 10, true) {
		t.Fatal("blocked: the partition holding the watermark must read on")
	}
	if a.PastBudget() != 2 {
		t.Fatalf("%d calls past the budget counted, want 2", a.PastBudget())
	}
	a.Taken(1)
	if a.Room(40, 10, true) {
		t.Fatal("the dedup step took again: the bound is back")
	}
}
