package localrunner

import (
	"testing"
	"time"
)

func TestReadAheadRoom(t *testing.T) {
	now := time.Unix(1000, 0)
	key := NewReadAheadKey()
	defer ReleaseReadAhead(key)
	a := ReadAheadOf(key)
	a.now = func() time.Time { return now }
	a.lastTaken.Store(now.UnixMilli())
	if ReadAheadOf(key) != a {
		t.Fatal("one key, two accounts")
	}

	const budget, call = 10_000, 2_000
	if !a.Room(budget, call) {
		t.Fatal("an empty account has no room")
	}
	a.Queued(8_000)
	if !a.Room(budget, call) {
		t.Fatal("8,000 waiting: a call of 2,000 fits a budget of 10,000")
	}
	a.Queued(1)
	if a.Room(budget, call) {
		t.Fatal("8,001 waiting: a call of 2,000 does not fit")
	}
	a.Taken(1_001)
	if !a.Room(budget, call) || a.Ahead() != 7_000 || a.Peak() != 8_001 {
		t.Fatalf("after taking 1,001: room %v, ahead %d, peak %d", a.Room(budget, call), a.Ahead(), a.Peak())
	}
	if !a.Room(0, call) {
		t.Fatal("a zero budget bounds nothing")
	}
	var none *ReadAhead
	none.Queued(5)
	none.Taken(5)
	if !none.Room(1, 1) || none.Ahead() != 0 || ReadAheadOf("") != nil {
		t.Fatal("no account must bound nothing")
	}
}

// TestReadAheadStall: when the dedup step takes nothing in for StallAfter
// (its account is in another process), the sources read on rather than
// stall; the bound comes back as soon as it takes records again.
func TestReadAheadStall(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &ReadAhead{now: func() time.Time { return now }}
	a.lastTaken.Store(now.UnixMilli())
	a.Queued(50)
	if a.Room(40, 10) {
		t.Fatal("over budget, the dedup step just took: no room")
	}
	now = now.Add(StallAfter - time.Millisecond)
	if a.Room(40, 10) {
		t.Fatal("no room one millisecond before StallAfter")
	}
	now = now.Add(time.Millisecond)
	if !a.Room(40, 10) {
		t.Fatal("after StallAfter without progress, the sources must read on")
	}
	a.Taken(1)
	if a.Room(40, 10) {
		t.Fatal("the dedup step took again: the bound is back")
	}
}
