package transforms

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
)

// Compaction spread over the shards (issue #25, item 5).
//
//	go test ./transforms -run 'Compaction' -v -count=1

// compactionHours runs shards shards for hours hours of event time, ids
// ids a shard an hour, through the shard state functions OnTimer calls
// (Judge, then advance at every hourly boundary), and returns how many
// shards compacted in each hour. With bunched set it applies the schedule
// before issue #25 instead: NeedsCompaction at an expiry, nothing else.
func compactionHours(t *testing.T, shards, hours, ids int, bunched bool) []int {
	t.Helper()
	p := skewPolicy
	retention := (25 * time.Hour).Milliseconds()
	h := time.Hour.Milliseconds()
	per := make([]int, hours)
	for s := range shards {
		st := newShardState(model.NoWatermark)
		for hour := range hours {
			start := skewStart + int64(hour)*h
			for i := range ids {
				e := model.Event{EventID: fmt.Sprintf("%d-%d-%d", s, hour, i), EventTime: start + int64(i), Fingerprint: 1}
				if v := st.Judge(&e, p); v.Verdict == event.Counted {
					st.stored++
					st.armed[start] = true
				}
			}
			// The boundary at the end of this hour fires (the watermark
			// passes it within the next hour).
			forgot, compact := st.advance(s, start+h, retention, p)
			if bunched {
				compact = forgot > 0 && st.NeedsCompaction()
			}
			if st.stored > 2*st.ids.n+ids {
				t.Fatalf("shard %d at hour %d: %d ids in the bag for %d live, over the cap", s, hour, st.stored, st.ids.n)
			}
			if compact {
				st.stored = st.ids.n
				per[hour]++
			}
		}
	}
	return per
}

// TestCompactionSpreadOverShards: 2,048 shards, four days. With each shard
// at its own slot no more than 5 % of them compact in any one hour (the
// first day of expiries and every day after), and every shard compacts
// about once a retention. Negative control: the schedule before, where all
// 2,048 compact in the same hour.
func TestCompactionSpreadOverShards(t *testing.T) {
	const shards, hours, ids = 2048, 4 * 24, 2
	for _, c := range []struct {
		name    string
		bunched bool
	}{{"slot per shard", false}, {"before issue #25 (control)", true}} {
		t.Run(c.name, func(t *testing.T) {
			per := compactionHours(t, shards, hours, ids, c.bunched)
			total, worst, worstHour := 0, 0, 0
			busy := 0
			for hour, n := range per {
				total += n
				if n > worst {
					worst, worstHour = n, hour
				}
				if n > 0 {
					busy++
				}
			}
			share := 100 * float64(worst) / shards
			t.Logf("%d compactions in %d hours, in %d distinct hours; at most %d shards (%.1f %%) in one hour (hour %d)",
				total, hours, busy, worst, share, worstHour)
			if c.bunched {
				if worst != shards {
					t.Errorf("control: at most %d shards compacted in one hour, want all %d (the bunching this fixes)", worst, shards)
				}
				return
			}
			if share > 5 {
				t.Errorf("%d shards (%.1f %%) compacted in hour %d, want at most 5 %%", worst, share, worstHour)
			}
			// From hour 26 (the first expiry) on, one a shard every 25 hours.
			if want := shards * (hours - 26) / 25; total < want*9/10 || total > want*11/10 {
				t.Errorf("%d compactions, want about %d (one a shard every 25 hours)", total, want)
			}
		})
	}
}

// TestCompactionNeverChangesAVerdict drives the dedup DoFn (arrival order,
// no cache: every bundle reads its ids back from the bag, so a rewrite that
// lost one would count its retry) for shards whose slots differ, over the
// same 100 hours: every hour 3 new ids, retries of ids 5 and 20 hours old
// (duplicates) and another payload for one 10 hours old (a conflict). Each
// shard rewrites its bag at its own hours, and all judge alike.
func TestCompactionNeverChangesAVerdict(t *testing.T) {
	const hours = 100
	h := time.Hour.Milliseconds()
	type outcome struct {
		counted, conflicts []string
		hours              []int
	}
	var first *outcome
	for _, shard := range []int{0, 1, 12, 2047} {
		f := &dedupFn{
			keyedStep: keyedStep{DedupOptions: DedupOptions{Policy: skewPolicy, Retention: (25 * time.Hour).Milliseconds(), NoCache: true}, CacheID: "compaction"},
			Pending:   state.MakeBagState[[]byte]("pending"), Meta: state.MakeValueState[[]byte]("meta"),
			IDs: state.MakeBagState[[]byte]("ids"), Release: timers.InEventTime("release"),
		}
		f.Setup()
		run := &skewRun{readMinute: map[string]int{}, outMinute: map[string]int{}}
		sp := &countingShard{memShard: &memShard{memState{values: map[string]any{}}, map[string][]any{}}}
		d := &skewDriver{t: t, f: f, sp: sp, tp: &recordTimers{}, timers: map[string]int64{}, run: run, shard: shard}
		o := &outcome{}
		line := 0
		ev := func(hour, i int, fp uint64) model.Event {
			line++
			start := skewStart + int64(hour)*h
			return model.Event{EventID: "id-" + strconv.Itoa(hour) + "-" + strconv.Itoa(i), EventTime: start + int64(i)*1000,
				Fingerprint: fp, Dims: "{}", Partition: "p0", Position: fmt.Sprintf("p0/000001.jsonl:%d", line)}
		}
		for hour := range hours {
			d.minute = hour
			var b model.EventBatch
			for i := range 3 {
				b.Events = append(b.Events, ev(hour, i, 1))
			}
			for _, back := range []int{5, 20} {
				if hour >= back {
					b.Events = append(b.Events, ev(hour-back, 0, 1))
				}
			}
			if hour >= 10 {
				b.Events = append(b.Events, ev(hour-10, 1, 2))
			}
			wm := skewStart + int64(hour)*h + 50*time.Minute.Milliseconds() - skewWatermark.OutOfOrderBound.Milliseconds()
			for i := range b.Events {
				b.Events[i].WatermarkBefore = wm
			}
			// The gate knows the watermark passed the hour's start (the
			// previous window's end) and passes the batch with it.
			b.Watermark = skewStart + int64(hour)*h
			before := sp.idClears
			d.process(b)
			d.fireUpTo(wm)
			if sp.idClears > before {
				o.hours = append(o.hours, hour)
			}
		}
		d.fireUpTo(int64(mtime.MaxTimestamp))
		for _, e := range run.counted {
			o.counted = append(o.counted, e.EventID)
		}
		for _, c := range run.conflicts {
			o.conflicts = append(o.conflicts, c.EventID)
		}
		t.Logf("shard %d: %d counted, %d conflicts, %d duplicates; ids bag rewritten at hours %v", shard,
			len(run.counted), len(run.conflicts), run.delivered-len(run.counted)-len(run.conflicts)-run.tooLate, o.hours)
		if len(run.counted) != 3*hours || len(run.conflicts) != hours-10 || run.tooLate != 0 {
			t.Errorf("shard %d: counted %d, conflicts %d, too late %d; want %d, %d, 0", shard, len(run.counted), len(run.conflicts), run.tooLate, 3*hours, hours-10)
		}
		if first == nil {
			first = o
			continue
		}
		if !slices.Equal(o.counted, first.counted) || !slices.Equal(o.conflicts, first.conflicts) {
			t.Errorf("shard %d judged otherwise than shard 0", shard)
		}
		if len(o.hours) == 0 || slices.Equal(o.hours, first.hours) {
			t.Errorf("shard %d rewrote its ids at hours %v, shard 0 at %v: want its own hours", shard, o.hours, first.hours)
		}
	}
}
