package launch

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
)

// TestReadAheadBound replays a log with a small read-ahead bound: the
// records waiting for the dedup step never exceed the bound plus one call
// for each partition but the one granted last (a reader asks for room for a
// whole call and counts its records as the call ends, so only calls that
// run at the same time, one per partition, overlap), plus one call for each
// call the account let read past the bound because what waited was held
// behind the watermark (flow.Blocked), and every figure, row and audit
// payload equals the oracle's. Negative control: with the bound out of the
// way the sources run far ahead of dedup (prism has no backpressure of its
// own), so the bound is what held them.
//
// Then the horizon: on a log as long but twenty days deep, with the record
// budget out of the way, the sources read well under (two thirds of) what they read
// with a lead longer than the log (the comparison is its own negative
// control: without the horizon the two runs are the same).
func TestReadAheadBound(t *testing.T) {
	if testing.Short() {
		t.Skip("four replays of 60,000 events")
	}
	const events, budget, perCall, partitions = 60_000, 2_000, 500, 4
	bounded := func(logDir string, readAhead int, lead time.Duration) *Summary {
		o := options(t, logDir)
		o.ReadAheadRecords, o.MaxPerCall, o.ReadAheadLead = readAhead, perCall, lead
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

	logDir := demoLog(t, events)
	sum := bounded(logDir, budget, 0)
	past := sum.ReadAhead.PastBudget
	if limit := budget + int64(partitions-1+past)*perCall; sum.ReadAhead.Peak > limit {
		t.Errorf("%d records waited for the dedup step at once, want at most %d (budget %d + (%d other partitions + %d calls past the budget) x %d a call)",
			sum.ReadAhead.Peak, limit, budget, partitions-1, past, perCall)
	}
	t.Logf("bounded: peak %d of budget %d, %d calls past it", sum.ReadAhead.Peak, budget, past)
	free := bounded(logDir, 1<<30, 0)
	if limit := int64(budget + partitions*perCall); free.ReadAhead.Peak <= limit {
		t.Errorf("negative control: without a bound only %d records waited at once; the test cannot tell the bound from a slow source", free.ReadAhead.Peak)
	}
	t.Logf("record budget out of the way: peak %d", free.ReadAhead.Peak)

	// The horizon (flow.Lead: 8 h 10 min with the defaults, 1,021 events of
	// the deep log's 125 an hour) holds the sources to well under what they
	// read with a lead longer than the log. Not to the lead's share: about
	// 20,000 records wait at the peak, because records taken at the read
	// front (too-late ones, batches the gate passes on) move the frontier
	// (docs/performance.md, "The horizon").
	c := gen.Demo()
	c.Events, c.Span = events, 20*24*time.Hour
	deep := filepath.Join(t.TempDir(), "deep")
	if _, err := gen.Write(deep, c); err != nil {
		t.Fatal(err)
	}
	horizon := bounded(deep, 1<<30, 0)
	far := bounded(deep, 1<<30, 10*c.Span)
	if 3*horizon.ReadAhead.Peak > 2*far.ReadAhead.Peak {
		t.Errorf("with the horizon %d records waited at once, with a lead longer than the log %d: the horizon did not hold the sources to two thirds of it",
			horizon.ReadAhead.Peak, far.ReadAhead.Peak)
	}
	t.Logf("deep log: peak %d with the horizon (%d calls past it), %d with a lead longer than the log", horizon.ReadAhead.Peak, horizon.ReadAhead.PastBudget, far.ReadAhead.Peak)
}
