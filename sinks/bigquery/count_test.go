package bigquery

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// countingAppender counts Storage Write API calls per table and keeps no
// rows.
type countingAppender struct {
	creates, appends, rows map[string]int
	// seals counts the batches sealed (flushes), for simulate.
	seals map[string]int
}

func newCountingAppender() *countingAppender {
	return &countingAppender{creates: map[string]int{}, appends: map[string]int{}, rows: map[string]int{}, seals: map[string]int{}}
}

func (c *countingAppender) CreateStream(_ context.Context, tbl string) (string, error) {
	c.creates[tbl]++
	return tbl + "/s" + strconv.Itoa(c.creates[tbl]), nil
}

func (c *countingAppender) Append(_ context.Context, tbl, _ string, _ int64, rows [][]byte) error {
	c.appends[tbl]++
	c.rows[tbl] += len(rows)
	return nil
}

// workload says which table (if any) the i-th event of a second adds a row
// to, and under which record key.
type workload func(i int) (tbl, key string)

// shardsOf is how many keys the write step spreads a table over:
// checkpoints go to one (writeBigQueryProgress), the rest to p.Shards.
func shardsOf(tbl string, p sink.FlushPolicy) int {
	if tbl == table.SourceCheckpoints.Name {
		return 1
	}
	return p.Shards
}

// simulate runs the write step's batching rules (onRow, flushStep: the
// code the DoFn calls) over `seconds` of simulated time at `rate` events per
// second, delivered in bundles of `bundle`, with a clock tick to every key
// each p.Interval, in a bundle of its own, as the job's clock sends them;
// then drains what is left as the end of the input does. The flushes seal
// into streams of pool (nil: a new stream each), whose clock must be
// simulated time: simulate advances it (*now). It counts the calls and
// checks that every row reached the table.
func simulate(t *testing.T, p sink.FlushPolicy, rate int, bundle time.Duration, seconds int, w workload, rowBytes map[string]int,
	pool *streamPool, now *time.Duration) *countingAppender {
	t.Helper()
	app := newCountingAppender()
	stores := map[string]*memStore{}
	rows := map[string][]byte{}
	for tbl, n := range rowBytes {
		rows[tbl] = make([]byte, n)
		for shard := range shardsOf(tbl, p) {
			stores[tbl+"/"+strconv.Itoa(shard)] = &memStore{}
		}
	}
	if now == nil {
		now = new(time.Duration)
	}
	perBundle := int(int64(rate) * int64(bundle) / int64(time.Second))
	steps := int(time.Duration(seconds) * time.Second / bundle)
	ctx := context.Background()
	sent := map[string]int{}
	event := 0
	step := func(k string, sealedHere map[string]bool) bool {
		tbl, _, _ := strings.Cut(k, "/")
		res, err := flushStep(ctx, stores[k], app, pool, tbl, sealedHere[k], noSleep)
		if err != nil {
			t.Fatal(err)
		}
		if res.Sealed {
			sealedHere[k] = true
			app.seals[tbl]++
		}
		return res.Pending
	}
	next := p.Interval
	for i := range steps {
		sealedHere := map[string]bool{} // per bundle
		for range perBundle {
			tbl, key := w(event % rate)
			event++
			if tbl == "" {
				continue
			}
			k := tbl + "/" + strconv.Itoa(shardOf(key, shardsOf(tbl, p)))
			sent[tbl]++
			_, res, err := onRow(ctx, stores[k], app, pool, tbl, rows[tbl], p, sealedHere[k], noSleep)
			if err != nil {
				t.Fatal(err)
			}
			if res.Sealed {
				sealedHere[k] = true
				app.seals[tbl]++
			}
		}
		if *now = time.Duration(i+1) * bundle; *now >= next {
			next += p.Interval
			tick := map[string]bool{}
			for k := range stores {
				step(k, tick)
			}
		}
	}
	for pending := true; pending; { // the end of the input
		pending = false
		drain := map[string]bool{}
		for k := range stores {
			pending = step(k, drain) || pending
		}
	}
	for tbl, n := range sent {
		if app.rows[tbl] != n {
			t.Fatalf("%s: %d rows appended of %d", tbl, app.rows[tbl], n)
		}
	}
	return app
}

// TestBigQueryCallsBoundedByFlushInterval proves that at 20,000 events/s the
// Storage Write API calls per table per minute follow the flush interval
// (and the data volume), not the bundle rate: the same minute delivered in
// 1 ms bundles (60,000 bundles, where the old per-bundle DML would have sent
// 60,000 statements per table) and in 100 ms bundles costs the same calls.
func TestBigQueryCallsBoundedByFlushInterval(t *testing.T) {
	const rate, seconds = 20_000, 60
	p := sink.DefaultFlushPolicy
	sizes := map[string]int{table.HourlyRevenueChangelog.Name: 120, table.TooLateEvents.Name: 300, table.ConflictEvents.Name: 300, table.QuarantinedEvents.Name: 300}
	// A heavy but plausible minute: 2,000 keys each refreshed once a minute
	// (EARLY), 1 % of events too late, 0.1 % conflicting, 0.5 % quarantined.
	typical := func(i int) (string, string) {
		pos := "p0/f.jsonl:" + strconv.Itoa(i)
		switch {
		case i%10 == 0 && i < 20_000/600*10:
			return table.HourlyRevenueChangelog.Name, "key" + strconv.Itoa(i)
		case i%100 == 1:
			return table.TooLateEvents.Name, pos
		case i%1000 == 2:
			return table.ConflictEvents.Name, pos
		case i%200 == 3:
			return table.QuarantinedEvents.Name, pos
		}
		return "", ""
	}
	// The worst case for one table: every event quarantined.
	flood := func(i int) (string, string) { return table.QuarantinedEvents.Name, "p0/f.jsonl:" + strconv.Itoa(i) }

	for _, wl := range []struct {
		name string
		w    workload
	}{{"typical", typical}, {"all quarantined", flood}} {
		var first map[string]int
		for _, bundle := range []time.Duration{time.Millisecond, 100 * time.Millisecond} {
			var now time.Duration
			app := simulate(t, p, rate, bundle, seconds, wl.w, sizes, simulatedPool(&now), &now)
			calls := map[string]int{}
			for _, tbl := range appendTables {
				if app.rows[tbl] == 0 {
					continue
				}
				rows := app.rows[tbl]
				bytes := rows * sizes[tbl]
				// Flushes per table: one per shard per interval, plus the
				// ones the size limits force, plus the last partial one.
				flushes := p.Shards*(int(time.Duration(seconds)*time.Second/p.Interval)+1) +
					rows/int(p.MaxRows) + bytes/int(p.MaxBytes) + p.Shards
				if app.seals[tbl] > flushes {
					t.Errorf("%s, %v bundles, %s: %d flushes in a minute, bound %d", wl.name, bundle, tbl, app.seals[tbl], flushes)
				}
				if maxAppends := flushes + bytes/maxAppendBytes; app.appends[tbl] > maxAppends {
					t.Errorf("%s, %v bundles, %s: %d append requests, bound %d", wl.name, bundle, tbl, app.appends[tbl], maxAppends)
				}
				// Each append is, on the wire, two stream lookups (managedwriter)
				// and the AppendRows request; a stream is created per shard,
				// then reused (TestBigQueryStreamsPerHour).
				calls[tbl] = app.creates[tbl] + 3*app.appends[tbl]
				t.Logf("%s, %v bundles: %s: %d rows, %d flushes, %d streams, %d append requests, %d API calls per minute",
					wl.name, bundle, tbl, rows, app.seals[tbl], app.creates[tbl], app.appends[tbl], calls[tbl])
			}
			// 100 times the bundles may not cost more than a few calls
			// more: the clock, not the bundles, paces the flushes.
			if first == nil {
				first = calls
				continue
			}
			for tbl, n := range calls {
				if d := n - first[tbl]; d > 8 || d < -8 {
					t.Errorf("%s, %s: %d calls with 1 ms bundles, %d with 100 ms bundles", wl.name, tbl, first[tbl], n)
				}
			}
		}
	}
}

// simulatedPool is a streamPool on simulate's clock.
func simulatedPool(now *time.Duration) *streamPool {
	start := time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)
	return newStreamPool(func() time.Time { return start.Add(*now) })
}

// streamQuota is half of BigQuery's CreateWriteStream quota (10,000 an hour
// per project and region): one job may use at most this, so that a second
// one in the same project and region still fits.
const streamQuota = 5_000

// TestBigQueryStreamsPerHour counts the CreateWriteStream calls of a
// simulated hour at 20,000 events/s, with the default flush policy and the
// checkpoints' step beside the rows' (every table and shard busy all the
// hour), and holds them to half the quota. The same hour with a new stream
// per flush (no pool: the write step before streams were reused) is the
// negative control: it goes over.
//
//	go test ./sinks -run TestBigQueryStreamsPerHour -count=1 -v
func TestBigQueryStreamsPerHour(t *testing.T) {
	const rate, seconds = 20_000, 3600
	p := sink.DefaultFlushPolicy
	sizes := map[string]int{table.HourlyRevenueChangelog.Name: 120, table.TooLateEvents.Name: 300, table.ConflictEvents.Name: 300, table.QuarantinedEvents.Name: 300, table.SourceCheckpoints.Name: 80}
	// As TestBigQueryCallsBoundedByFlushInterval's typical minute, plus a
	// checkpoint a second (a progress bundle); the record keys vary with
	// the event so that every shard of every table gets rows.
	typical := func(i int) (string, string) {
		switch {
		case i%10 == 0 && i < 20_000/600*10:
			return table.HourlyRevenueChangelog.Name, "key" + strconv.Itoa(i)
		case i%100 == 1:
			return table.TooLateEvents.Name, "p0/f.jsonl:" + strconv.Itoa(i)
		case i%1000 == 2:
			return table.ConflictEvents.Name, "p0/f.jsonl:" + strconv.Itoa(i)
		case i%200 == 3:
			return table.QuarantinedEvents.Name, "p0/f.jsonl:" + strconv.Itoa(i)
		case i == 4:
			return table.SourceCheckpoints.Name, "p0"
		}
		return "", ""
	}
	// The most rows: every event quarantined, 21.6 GB an hour to one table.
	flood := func(i int) (string, string) { return table.QuarantinedEvents.Name, "p0/f.jsonl:" + strconv.Itoa(i) }

	for _, tc := range []struct {
		name  string
		w     workload
		reuse bool
	}{
		{"typical, a new stream per flush (before)", typical, false},
		{"typical", typical, true},
		{"all quarantined", flood, true},
	} {
		var now time.Duration
		var pool *streamPool
		if tc.reuse {
			pool = simulatedPool(&now)
		}
		app := simulate(t, p, rate, 100*time.Millisecond, seconds, tc.w, sizes, pool, &now)
		creates, flushes := 0, 0
		for _, tbl := range appendTables {
			creates += app.creates[tbl]
			flushes += app.seals[tbl]
		}
		t.Logf("%s: %d stream creations per hour at %d events/s (%d flushes; half the quota: %d)", tc.name, creates, rate, flushes, streamQuota)
		switch {
		case tc.reuse && creates > streamQuota:
			t.Errorf("%s: %d stream creations in an hour, over half the quota (%d)", tc.name, creates, streamQuota)
		case !tc.reuse && creates <= streamQuota:
			t.Errorf("%s: %d stream creations in an hour: the negative control no longer exceeds %d", tc.name, creates, streamQuota)
		}
	}
}
