package flow

import (
	"math"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// none is a partition that has read nothing yet.
const none = model.NoWatermark

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
	if !a.Room(budget, call, 0, none, false) {
		t.Fatal("an empty account has no room")
	}
	a.Queued(8_000, none)
	if !a.Room(budget, call, 0, none, false) {
		t.Fatal("8,000 waiting: a call of 2,000 fits a budget of 10,000")
	}
	a.Queued(1, none)
	if a.Room(budget, call, 0, none, false) {
		t.Fatal("8,001 waiting: a call of 2,000 does not fit")
	}
	a.Taken(1_001, none)
	if !a.Room(budget, call, 0, none, false) || a.Ahead() != 7_000 || a.Peak() != 8_001 {
		t.Fatalf("after taking 1,001: room %v, ahead %d, peak %d", a.Room(budget, call, 0, none, false), a.Ahead(), a.Peak())
	}
	if !a.Room(0, call, 0, none, false) {
		t.Fatal("a zero budget bounds nothing")
	}
	var nobody *ReadAhead
	nobody.Queued(5, 0)
	nobody.Taken(5, 0)
	if !nobody.Room(1, 1, time.Hour, 0, false) || nobody.Ahead() != 0 || ReadAheadOf("") != nil {
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
	a := newReadAhead(func() time.Time { return now })
	a.Queued(50, none)
	if a.Room(40, 10, 0, none, true) || a.Room(40, 10, 0, none, false) {
		t.Fatal("over budget, the dedup step just took: no room")
	}
	now = now.Add(Blocked - time.Millisecond)
	if a.Room(40, 10, 0, none, true) {
		t.Fatal("room one millisecond before Blocked")
	}
	now = now.Add(time.Millisecond)
	if a.Room(40, 10, 0, none, false) {
		t.Fatal("a partition that does not hold the watermark read past the budget")
	}
	if !a.Room(40, 10, 0, none, true) || !a.Room(40, 10, 0, none, true) {
		t.Fatal("blocked: the partition holding the watermark must read on")
	}
	if a.PastBudget() != 2 {
		t.Fatalf("%d calls past the budget counted, want 2", a.PastBudget())
	}
	a.Taken(1, none)
	if a.Room(40, 10, 0, none, true) {
		t.Fatal("the dedup step took again: the bound is back")
	}
}

// TestReadAheadHorizon: before anything is taken the lowest watermark a
// call ended at stands in for the frontier; once records were taken, a partition whose
// watermark is lead past the largest WatermarkBefore taken has no room,
// however much of the record budget is left; the frontier never moves back;
// a partition holding the watermark reads past the horizon once dedup has
// taken nothing for Blocked.
func TestReadAheadHorizon(t *testing.T) {
	now := time.Unix(1000, 0)
	a := newReadAhead(func() time.Time { return now })
	const budget, call, lead = 100_000, 5_000, 2 * time.Hour
	hour := time.Hour.Milliseconds()
	if a.Horizon(lead) != math.MaxInt64 || !a.Room(budget, call, lead, 500*hour, false) {
		t.Fatal("nothing read yet: no horizon")
	}
	a.Queued(6, 7*hour)
	a.Queued(4, 6*hour)
	if got := a.Horizon(lead); got != 8*hour {
		t.Fatalf("nothing taken: horizon %d, want %d (the lowest watermark a call ended at, 6 h, + lead)", got, 8*hour)
	}
	a.Taken(5, 10*hour)
	a.Taken(5, 9*hour) // an older read taken later
	if got := a.Horizon(lead); got != 12*hour {
		t.Fatalf("horizon %d, want %d (frontier 10 h + lead 2 h)", got, 12*hour)
	}
	if !a.Room(budget, call, lead, 12*hour-1, false) {
		t.Fatal("one millisecond below the horizon: room")
	}
	// A call below the horizon ends at it; one past it (blocked) ends lead/8 on, not a whole call on.
	for _, c := range []struct{ watermark, want int64 }{
		{model.NoWatermark, 12 * hour}, {11 * hour, 12 * hour}, {12 * hour, 12*hour + hour/4}, {30 * hour, 30*hour + hour/4},
	} {
		if got := a.CallEnd(lead, c.watermark); got != c.want {
			t.Errorf("CallEnd at watermark %d = %d, want %d", c.watermark, got, c.want)
		}
	}
	if a.CallEnd(0, 30*hour) != math.MaxInt64 || (*ReadAhead)(nil).CallEnd(lead, 30*hour) != math.MaxInt64 {
		t.Error("no lead or no account: a call ends where its size does")
	}
	if a.Room(budget, call, lead, 12*hour, true) || a.Room(budget, call, lead, 12*hour, false) {
		t.Fatal("at the horizon: no room")
	}
	if a.Horizon(0) != math.MaxInt64 || !a.Room(budget, call, 0, 500*hour, false) {
		t.Fatal("a lead of 0 sets no horizon")
	}
	now = now.Add(Blocked)
	if a.Room(budget, call, lead, 12*hour, false) || !a.Room(budget, call, lead, 12*hour, true) || a.PastBudget() != 1 {
		t.Fatalf("blocked at the horizon: only the partition holding the watermark reads on (past %d)", a.PastBudget())
	}
}
