package pipeline_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/scenario"
	"github.com/revenue-stream/hourly/transforms"
)

// idOnOtherShard returns an id starting with prefix whose dedup shard holds
// none of taken: the shard then knows nothing of the windows of those ids
// unless the pipeline tells every shard about every window (issue #12).
func idOnOtherShard(t *testing.T, prefix string, shards int, taken ...string) string {
	t.Helper()
	used := map[int]bool{}
	for _, id := range taken {
		used[transforms.ShardOf(id, shards)] = true
	}
	for i := range 1000 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if !used[transforms.ShardOf(id, shards)] {
			return id
		}
	}
	t.Fatalf("no id with prefix %q avoids the shards of %v", prefix, taken)
	return ""
}

// Two partitions, one idle and returning (issue #12, SPEC §2): p1 writes one
// event at 10:10 and goes quiet, p0 moves the pipeline watermark past 12:00
// and [10:00, 11:00) gets its FINAL row with 3 events. Then p1 comes back:
//
//   - 10:40 passes rule (a) (p1's own watermark is 10:09) but its window is
//     FINAL: too late, with its payload, whatever its dedup shard holds;
//   - 11:50 opens [11:00, 12:00) after the watermark passed its end: the
//     window starts with a LATE row, never ON_TIME;
//   - 11:55 lands in a window with rows: a LATE revision.
//
// The returning ids are chosen on dedup shards that hold no id of the closed
// window, which is what lost the 10:40 record before.
//
// With 512 shards most shards hold no id at all; each of the three windows
// with data is still announced to every shard, once, however many bundles
// carry it (issue #25).
func TestIdlePartitionReturns(t *testing.T) {
	for _, shards := range []int{pipeline.DefaultShards, 512} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) { testIdlePartitionReturns(t, shards) })
	}
}

func testIdlePartitionReturns(t *testing.T, shards int) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.Triggers.AllowedLateness = time.Hour
	o.Watermark.OutOfOrderBound = time.Minute
	o.Watermark.IdleTimeout = 3 * time.Second
	o.DedupShards = shards
	early := []string{"a1", "b1", "a2"}
	back := idOnOtherShard(t, "b2", shards, early...)
	opens := idOnOtherShard(t, "b3", shards, early...)

	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "a1", "2026-11-04T10:05:00Z", "u1", "100").
		Purchase("p1", "b1", "2026-11-04T10:10:00Z", "u2", "50").
		Purchase("p0", "a2", "2026-11-04T10:20:00Z", "u3", "25").
		AdvanceWatermark().
		AdvanceProcessingTime(5*time.Second). // both partitions idle
		Purchase("p0", "a3", "2026-11-04T12:30:00Z", "u4", "7").
		AdvanceWatermark() // p1 idle: the minimum is p0's 12:29
	if w := sc.Watermark(); w != ms("2026-11-04T12:29:00Z") {
		t.Fatalf("watermark = %s, want 12:29", model.FormatTime(w))
	}
	sc.Purchase("p1", back, "2026-11-04T10:40:00Z", "u5", "40").
		AdvanceProcessingTime(time.Second).
		Purchase("p1", opens, "2026-11-04T11:50:00Z", "u6", "10").
		AdvanceProcessingTime(time.Second).
		Purchase("p1", "b4", "2026-11-04T11:55:00Z", "u7", "5")
	res := run(t, sc, o)

	rowtest.AssertRowSet(t, "rows", res.rows.Values(), []model.Row{
		row("2026-11-04T10:00:00Z", time.Hour, "175", 3, 1, model.OnTime),
		row("2026-11-04T10:00:00Z", time.Hour, "175", 3, 2, model.Final),
		row("2026-11-04T11:00:00Z", time.Hour, "10", 1, 1, model.Late),
		row("2026-11-04T11:00:00Z", time.Hour, "15", 2, 2, model.Late),
		row("2026-11-04T11:00:00Z", time.Hour, "15", 2, 3, model.Final),
		row("2026-11-04T12:00:00Z", time.Hour, "7", 1, 1, model.OnTime),
		row("2026-11-04T12:00:00Z", time.Hour, "7", 1, 2, model.Final),
	})
	late := res.tooLate.Values()
	if len(late) != 1 || late[0].EventID != back || late[0].Position != "p1/events.jsonl:2" ||
		late[0].Reason != model.ReasonWindowClosed || !strings.Contains(string(late[0].Payload), `"amount":"40"`) {
		t.Errorf("too-late = %+v, want %s at p1/events.jsonl:2 with its payload", late, back)
	}
	if c := res.counts; c.Counted != 6 || c.TooLate != 1 || c.AfterFinal != 0 {
		t.Errorf("counted %d, too_late %d, invariant_data_after_final %d; want 6, 1, 0", c.Counted, c.TooLate, c.AfterFinal)
	}
	if n := res.counts.Counters[string(metrics.WindowFanOuts)]; n != 3 {
		t.Errorf("windows announced to every gate key: %d, want 3 (10:00, 11:00, 12:00)", n)
	}
	// The announcements go to the watermark gate's keys, whatever the
	// shard count: 7 events reach the dedup shards in at most 7 batches.
	if n := res.counts.DedupElements; n < 1 || n > 7 {
		t.Errorf("dedup step took in %d elements, want 1 to 7 batches", n)
	}
}
