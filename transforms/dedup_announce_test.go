package transforms

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func TestWindowsToArm(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}
	h := time.Hour.Milliseconds()
	bound := time.Minute.Milliseconds()
	start := at("2026-11-04T12:00:00Z")
	// Windows that can be open when data of 12:00 moves the watermark:
	// 12:00 - 1h lateness - 1m bound - 1h, floored: from 09:00.
	want := []int64{start - 3*h, start - 2*h, start - h, start}
	if got := windowsToArm(p, start, bound, model.NoWatermark); !slices.Equal(got, want) {
		t.Errorf("fresh shard: %v, want %v", got, want)
	}
	// Windows whose end the shard knows passed are not armed again.
	if got := windowsToArm(p, start, bound, start-h); !slices.Equal(got, want[2:]) {
		t.Errorf("known 11:00: %v, want %v", got, want[2:])
	}
	// A long lateness over tiny windows is capped to the nearest windows.
	p = triggers.Policy{Window: time.Minute, AllowedLateness: 24 * time.Hour}
	got := windowsToArm(p, start, 0, model.NoWatermark)
	if len(got) != maxGapWindows+1 || got[0] != start-maxGapWindows*time.Minute.Milliseconds() || got[len(got)-1] != start {
		t.Errorf("capped range: %d windows from %d, want %d ending at %d", len(got), got[0], maxGapWindows+1, start)
	}
}

// Every shard hears of every window of a bundle, on its first batch when
// that holds the dedup watermark below the window's close, else in a marker
// stamped with the window's earliest event.
func TestAnnounceReachesEveryShard(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}
	w10, w12 := at("2026-11-04T10:00:00Z"), at("2026-11-04T12:00:00Z")
	windows := map[int64]beam.EventTime{w10: beam.EventTime(at("2026-11-04T10:09:00Z")), w12: beam.EventTime(at("2026-11-04T12:29:00Z"))}
	order := []batchKey{{shard: 1, partition: "p0"}, {shard: 2, partition: "p1"}}
	pending := map[batchKey]*shardBatch{
		order[0]: {ts: beam.EventTime(at("2026-11-04T12:29:00Z"))}, // past 10:00's close (12:00)
		order[1]: {ts: beam.EventTime(at("2026-11-04T10:09:00Z"))},
	}
	batches := make([]model.EventBatch, 2)
	markers := announce(windows, 3, order, pending, p, batches)
	if !slices.Equal(batches[0].Windows, []int64{w12}) || !slices.Equal(batches[1].Windows, []int64{w10, w12}) {
		t.Errorf("windows on batches: %v and %v, want [12:00] and [10:00 12:00]", batches[0].Windows, batches[1].Windows)
	}
	got := map[int]marker{}
	for _, m := range markers {
		got[m.shard] = m
	}
	if m := got[0]; len(markers) != 2 || !slices.Equal(m.batch.Windows, []int64{w10, w12}) || m.ts != windows[w10] {
		t.Errorf("shard 0 marker %+v, want both windows at 10:09 (markers %+v)", m, markers)
	}
	if m := got[1]; !slices.Equal(m.batch.Windows, []int64{w10}) || m.ts != windows[w10] || len(m.batch.Events) != 0 {
		t.Errorf("shard 1 marker %+v, want 10:00 at 10:09", m)
	}
}
