package launch

import (
	"strings"
	"testing"
)

// TestReadAheadBound replays a log with a small read-ahead bound: the
// records waiting for the dedup step never exceed the bound plus one call
// for each partition but the one granted last (a reader asks for room for a
// whole call and counts its records as the call ends, so only calls that
// run at the same time, one per partition, overlap), plus one call for each
// call the account let read past the bound because what waited was held
// behind the watermark (flow.Blocked), and every figure, row
// and audit payload equals the oracle's. Negative control: the same replay
// with the bound out of the way lets the sources run far ahead (prism has
// no backpressure of its own), so the bound is what held them.
func TestReadAheadBound(t *testing.T) {
	if testing.Short() {
		t.Skip("two replays of 60,000 events")
	}
	logDir := demoLog(t, 60_000)
	const budget, perCall, partitions = 2_000, 500, 4
	bounded := func(readAhead int) *Summary {
		o := options(t, logDir)
		o.ReadAhead, o.MaxPerCall = readAhead, perCall
		sum, out := run(t, o)
		if sum.ReadAhead == nil || sum.ReadAhead.Budget != readAhead {
			t.Fatalf("summary read-ahead %+v, want the budget %d", sum.ReadAhead, readAhead)
		}
		if !strings.Contains(out, "read-ahead: at most") {
			t.Errorf("the summary does not show the read-ahead peak:\n%s", out)
		}
		wantReplay(t, o, logDir, sum)
		return sum
	}

	sum := bounded(budget)
	past := sum.ReadAhead.PastBudget
	if limit := budget + int64(partitions-1+past)*perCall; sum.ReadAhead.Peak > limit {
		t.Errorf("%d records waited for the dedup step at once, want at most %d (budget %d + (%d other partitions + %d calls past the budget) x %d a call)",
			sum.ReadAhead.Peak, limit, budget, partitions-1, past, perCall)
	}
	t.Logf("bounded: peak %d of budget %d, %d calls past it", sum.ReadAhead.Peak, budget, past)

	free := bounded(1 << 30)
	if limit := int64(budget + partitions*perCall); free.ReadAhead.Peak <= limit {
		t.Errorf("negative control: without a bound only %d records waited at once; the test cannot tell the bound from a slow source", free.ReadAhead.Peak)
	}
	t.Logf("unbounded: peak %d", free.ReadAhead.Peak)
}
