package transforms

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

// TestPositionOrderForgetsNoIDACopyNeeds (audit of 2026-12-06): in position
// order a shard forgot ids by the watermark the gate stamped on an incoming
// batch, before holding it and whatever it still held, so a copy held (or
// still on its way) was judged after its id was gone and counted again.
//
// X (2026-11-04 10:15, window [10:00, 11:00): closes 11-05 11:00, expires
// 11-05 12:00 with 25 h retention) is counted. Its identical copy passed a
// gate key that knew 11-05 10:30 (p1's watermark before it was 10:30); Z
// comes from a gate key already at 11-05 12:00, past X's expiry. Whichever
// of the copy and Z reaches the shard first, the copy must be a duplicate.
// X's id is still forgotten once the shard's own release passes its expiry
// (Y, p2's watermark 13:00): the bag and the cache both hold Z and Y only.
//
// Negative control: with the stamped watermark driving expiry in
// ProcessElement (before this fix) every case counts X twice.
func TestPositionOrderForgetsNoIDACopyNeeds(t *testing.T) {
	for _, c := range []struct {
		name      string
		copyFirst bool // the copy reaches the shard before Z
		noCache   bool
		// xFirst: X is its partition's first record (no watermark before
		// it), so its release is at the earliest timestamp.
		xFirst bool
	}{
		{"copy held when Z comes", true, false, false},
		{"copy held when Z comes, no cache", true, true, false},
		{"copy on its way when Z comes", false, false, false},
		{"copy on its way when Z comes, no cache", false, true, false},
		{"copy held when Z comes, X first of its partition", true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := expiryShard(t, c.noCache, true)
			f, sp, run := d.f, d.sp, d.run
			lines := map[string]int{}
			batch := func(partition, id, eventTime, amount, watermarkBefore, stamped string) model.EventBatch {
				lines[partition]++
				r := model.Record{Partition: partition, Line: []byte(rowtest.Purchase(id, eventTime, "u1", amount)),
					Position: fmt.Sprintf("%s/000001.jsonl:%d", partition, lines[partition]),
					ReadAt:   rowtest.MS("2026-11-06T00:00:00Z"), WatermarkBefore: model.NoWatermark}
				if watermarkBefore != "" {
					r.WatermarkBefore = rowtest.MS(watermarkBefore)
				}
				e, q := event.Parse(r, event.DefaultConfig())
				if q != nil {
					t.Fatalf("%s does not parse: %+v", r.Position, q)
				}
				return model.EventBatch{Events: []model.Event{e}, Watermark: rowtest.MS(stamped)}
			}

			xWatermark := "2026-11-04T10:05:00Z"
			if c.xFirst {
				xWatermark = ""
			}
			d.process(batch("p0", "x", "2026-11-04T10:15:00Z", "100", xWatermark, "2026-11-04T10:00:00Z"))
			d.fireUpTo(rowtest.MS("2026-11-04T10:06:00Z"))
			xCopy := batch("p1", "x", "2026-11-04T10:15:00Z", "100", "2026-11-05T10:30:00Z", "2026-11-05T10:30:00Z")
			z := batch("p2", "z", "2026-11-05T12:10:00Z", "7", "2026-11-05T12:05:00Z", "2026-11-05T12:00:00Z")
			if c.copyFirst {
				d.process(xCopy)
				d.process(z)
			} else {
				d.process(z)
				d.process(xCopy)
			}
			d.fireUpTo(rowtest.MS("2026-11-05T12:06:00Z"))
			d.process(batch("p2", "y", "2026-11-05T13:10:00Z", "3", "2026-11-05T13:00:00Z", "2026-11-05T13:00:00Z"))
			d.fireUpTo(rowtest.MS("2026-11-05T13:01:00Z"))

			got := map[string]int{}
			for _, e := range run.counted {
				got[e.EventID]++
			}
			if want := map[string]int{"x": 1, "z": 1, "y": 1}; !maps.Equal(got, want) {
				t.Errorf("counted %v, want %v", got, want)
			}
			if len(run.conflicts) != 0 {
				t.Errorf("conflicts %+v, want none", run.conflicts)
			}
			// read 4 = counted 3 + duplicates 1 + conflicts 0 (+ too late 0):
			// with every batch released, the copy is the one duplicate.
			if len(d.timers) != 0 {
				t.Fatalf("timers still set: %v", d.timers)
			}
			if dups := run.delivered - len(run.counted) - len(run.conflicts); run.delivered != 4 || dups != 1 {
				t.Errorf("read %d = counted %d + duplicates %d + conflicts %d, want 4 = 3 + 1 + 0",
					run.delivered, len(run.counted), dups, len(run.conflicts))
			}

			// X's window expired at the last release (13:00 >= 12:00): the
			// bag, read afresh, and the cache remember Z and Y only.
			// (The cache first: any load takes the shard's entry.)
			uncached := f.keyedStep
			uncached.NoCache = true
			for _, s := range []shardStore{f.store(0), uncached.store(f.Meta, &f.IDs, 0)} {
				st, err := s.load(context.Background(), sp)
				if err != nil {
					t.Fatal(err)
				}
				_, hasX := st.ids.get(hashID("x"))
				_, hasZ := st.ids.get(hashID("z"))
				if st.ids.n != 2 || hasX || !hasZ {
					t.Errorf("noCache %v: %d ids remembered (x %v, z %v), want z and y", s.NoCache, st.ids.n, hasX, hasZ)
				}
			}
		})
	}
}

// TestArrivalOrderSendsForgottenWindowsTooLate: in arrival order a shard
// forgets ids by the watermark a gate key stamped on a batch, and the gate's
// keys learn the watermark each from its own timers. X (window [10:00,
// 11:00) of 11-04: closes 11-05 11:00, ids forgotten at 11-05 12:00) is
// counted; Z comes from a gate key at 11-05 12:00; X's identical copy and
// W, a first of X's window, come from a key still at 11-05 10:30, which
// passes them. Once Z's stamp made the shard forget X's window, neither can
// be told from a first: both go to too-late (their window closed before a
// watermark the gate proved), never counted. Before Z, or with a stamp past
// the close but before the expiry, the copy is a duplicate and W counted.
//
// Negative control: without the check in judge, the "Z first" cases count X
// twice.
func TestArrivalOrderSendsForgottenWindowsTooLate(t *testing.T) {
	for _, c := range []struct {
		name    string
		zStamp  string // Z's gate key's watermark
		zFirst  bool   // Z reaches the shard before the copy and W
		noCache bool
		counted map[string]int
		late    []string // event ids sent to too-late
	}{
		{"Z first", "2026-11-05T12:00:00Z", true, false, map[string]int{"x": 1, "z": 1}, []string{"x", "w"}},
		{"Z first, no cache", "2026-11-05T12:00:00Z", true, true, map[string]int{"x": 1, "z": 1}, []string{"x", "w"}},
		{"copy first", "2026-11-05T12:00:00Z", false, false, map[string]int{"x": 1, "w": 1, "z": 1}, nil},
		{"Z past the close, before the expiry", "2026-11-05T11:30:00Z", true, false, map[string]int{"x": 1, "w": 1, "z": 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := expiryShard(t, c.noCache, false)
			run := d.run
			var late []string
			line := 0
			batch := func(partition, id, eventTime, amount, stamped string) model.EventBatch {
				line++
				r := model.Record{Partition: partition, Line: []byte(rowtest.Purchase(id, eventTime, "u1", amount)),
					Position: fmt.Sprintf("%s/000001.jsonl:%d", partition, line),
					ReadAt:   rowtest.MS("2026-11-06T00:00:00Z"), WatermarkBefore: rowtest.MS(stamped)}
				e, q := event.Parse(r, event.DefaultConfig())
				if q != nil {
					t.Fatalf("%s does not parse: %+v", r.Position, q)
				}
				return model.EventBatch{Events: []model.Event{e}, Watermark: rowtest.MS(stamped)}
			}
			d.process(batch("p0", "x", "2026-11-04T10:15:00Z", "100", "2026-11-04T10:05:00Z"))
			z := batch("p2", "z", "2026-11-05T12:10:00Z", "7", c.zStamp)
			behind := []model.EventBatch{
				batch("p1", "x", "2026-11-04T10:15:00Z", "100", "2026-11-05T10:30:00Z"),
				batch("p1", "w", "2026-11-04T10:40:00Z", "5", "2026-11-05T10:30:00Z"),
			}
			if c.zFirst {
				d.process(z)
			}
			for _, b := range behind {
				d.process(b)
			}
			if !c.zFirst {
				d.process(z)
			}
			got := map[string]int{}
			for _, e := range run.counted {
				got[e.EventID]++
			}
			if !maps.Equal(got, c.counted) {
				t.Errorf("counted %v, want %v", got, c.counted)
			}
			if len(d.timers) != 0 {
				t.Errorf("timers set in arrival order: %v", d.timers)
			}
			for _, l := range run.lates {
				late = append(late, l.EventID)
				if l.Reason != model.ReasonWindowClosed || l.Position == "" {
					t.Errorf("too-late row %+v: want reason %s and its position", l, model.ReasonWindowClosed)
				}
			}
			if !slices.Equal(late, c.late) {
				t.Errorf("too late %v, want %v", late, c.late)
			}
			// read 4 = counted + duplicates + conflicts 0 + too late.
			dups := run.delivered - len(run.counted) - len(run.conflicts) - run.tooLate
			if wantDups := 4 - len(c.late) - total(c.counted); run.delivered != 4 || len(run.conflicts) != 0 || dups != wantDups {
				t.Errorf("read %d = counted %d + duplicates %d + conflicts %d + too late %d, want 4 = %d + %d + 0 + %d",
					run.delivered, len(run.counted), dups, len(run.conflicts), run.tooLate, total(c.counted), wantDups, len(c.late))
			}
		})
	}
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// expiryShard is one dedup shard (25 h retention, skewPolicy) in memory
// state, driven by hand.
func expiryShard(t *testing.T, noCache, byPosition bool) *skewDriver {
	f := &dedupFn{
		keyedStep: keyedStep{DedupOptions: DedupOptions{Policy: skewPolicy, Retention: (25 * time.Hour).Milliseconds(), NoCache: noCache, ByPosition: byPosition}, CacheID: "expiry-" + t.Name()},
		Pending:   state.MakeBagState[[]byte]("pending"), Meta: state.MakeValueState[[]byte]("meta"),
		IDs: state.MakeBagState[[]byte]("ids"), Release: timers.InEventTime("release"),
	}
	f.Setup()
	t.Cleanup(func() { shardCache.take(cacheKey{pipeline: f.CacheID, shard: 0}) })
	sp := &countingShard{memShard: &memShard{memState{values: map[string]any{}}, map[string][]any{}}}
	return &skewDriver{t: t, f: f, sp: sp, tp: &recordTimers{}, timers: map[string]int64{}, run: &skewRun{outMinute: map[string]int{}}}
}
