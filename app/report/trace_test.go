package report

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

func line(id, at string) string {
	return fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":"u","amount":"1.00"}`, id, at) + "\n"
}

func writeLog(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTraceFolder replays a two-partition log with a 10m bound and checks
// every watermark by hand: watermark before an event = largest valid event
// time seen before it - 10m.
func TestTraceFolder(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, map[string]string{
		"p0/000001.jsonl": line("a", "2026-11-04T10:00:00Z") + // record 1, first: no watermark
			line("b", "2026-11-04T10:20:00Z") + // 2: wm 09:50
			"not json\n" + // 3: quarantined, no point, watermark unmoved
			line("c", "2026-11-04T10:05:00Z") + // 4: wm 10:10, behind, 15m late
			"\n" + // blank: not a record
			line("d", "2026-11-04T10:30:00Z"), // 5: wm 10:10
		"p0/000002.jsonl": line("e", "2026-11-04T08:00:00Z") + // 6: wm 10:20, behind, 2h30m late
			line("tail", "2026-11-04T11:00:00Z")[:20], // 7: no newline, still a line: malformed, no point
		"p1/000001.jsonl": line("f", "2026-11-04T12:00:00Z") + // 1: no watermark
			line("g", "2026-11-04T11:59:30Z") + // 2: wm 11:50, 30s late but not behind
			line("h", "2099-01-01T00:00:00Z") + // 3: future_event_time: never moves the watermark
			line("i", "2026-11-04T12:10:00Z"), // 4: wm 11:50
		"p1/.000002.jsonl.tmp": line("j", "2026-11-04T00:00:00Z"), // a producer's temporary file: ignored
	})
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute}
	now := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)
	traces, delays, err := TraceFolder(dir, policy, event.DefaultConfig(), now)
	if err != nil {
		t.Fatal(err)
	}
	no := model.NoWatermark
	want := []PartitionTrace{{
		Partition: "p0", Read: 7, Valid: 5, Behind: 2, Watermark: ms("2026-11-04T10:20:00Z"),
		Points: []TracePoint{
			{1, ms("2026-11-04T10:00:00Z"), no},
			{2, ms("2026-11-04T10:20:00Z"), ms("2026-11-04T09:50:00Z")},
			{4, ms("2026-11-04T10:05:00Z"), ms("2026-11-04T10:10:00Z")},
			{5, ms("2026-11-04T10:30:00Z"), ms("2026-11-04T10:10:00Z")},
			{6, ms("2026-11-04T08:00:00Z"), ms("2026-11-04T10:20:00Z")},
		},
	}, {
		Partition: "p1", Read: 4, Valid: 3, Behind: 0, Watermark: ms("2026-11-04T12:00:00Z"),
		Points: []TracePoint{
			{1, ms("2026-11-04T12:00:00Z"), no},
			{2, ms("2026-11-04T11:59:30Z"), ms("2026-11-04T11:50:00Z")},
			{4, ms("2026-11-04T12:10:00Z"), ms("2026-11-04T11:50:00Z")},
		},
	}}
	if !reflect.DeepEqual(traces, want) {
		t.Errorf("traces:\n%+v\nwant:\n%+v", traces, want)
	}

	// Delays: 0 0 15m 0 2h30m in p0, 0 30s 0 in p1.
	wantH := tracedDelays([]int64{6, 0, 0, 1, 0, 1, 0, 0}, 0, 150*time.Minute.Milliseconds(), 150*time.Minute.Milliseconds())
	if !reflect.DeepEqual(delays, wantH) {
		t.Errorf("delays:\n%+v\nwant:\n%+v", delays, wantH)
	}
}

func TestTraceFolderErrors(t *testing.T) {
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute}
	if _, _, err := TraceFolder(filepath.Join(t.TempDir(), "missing"), policy, event.DefaultConfig(), time.Now()); err == nil {
		t.Error("missing folder: no error")
	}
	if _, _, err := TraceFolder(t.TempDir(), watermark.Policy{OutOfOrderBound: -1}, event.DefaultConfig(), time.Now()); err == nil {
		t.Error("negative bound: no error")
	}
	if _, _, err := TraceFolder(t.TempDir(), policy, event.Config{}, time.Now()); err == nil {
		t.Error("invalid event config: no error")
	}
	traces, h, err := TraceFolder(t.TempDir(), policy, event.DefaultConfig(), time.Now())
	if err != nil || len(traces) != 0 || h.Total != 0 || len(h.Buckets) != len(delay.Buckets) {
		t.Errorf("empty folder: %v %v %+v", traces, err, h)
	}
}

// TestSamplerKeepsLateEvents: a long partition is cut down to at most
// MaxTracePoints points in arrival order, and a lone late event survives.
func TestSamplerKeepsLateEvents(t *testing.T) {
	s := newSampler(MaxTracePoints)
	const n = 100_003
	for i := 1; i <= n; i++ {
		et := int64(i) * 1000
		if i == 54_321 {
			et = 5 // hours behind the rest
		}
		s.add(TracePoint{Record: i, EventTime: et, Watermark: int64(i-1)*1000 - 600_000})
	}
	pts := s.points()
	if len(pts) > MaxTracePoints || len(pts) < MaxTracePoints/2 {
		t.Fatalf("%d points, want between %d and %d", len(pts), MaxTracePoints/2, MaxTracePoints)
	}
	found := false
	for i, p := range pts {
		if i > 0 && p.Record <= pts[i-1].Record {
			t.Fatalf("points out of arrival order at %d: %d after %d", i, p.Record, pts[i-1].Record)
		}
		found = found || p.Record == 54_321
	}
	if !found {
		t.Error("the late event was sampled away")
	}
	if pts[0].Record != 1 || pts[len(pts)-1].Record != n {
		t.Errorf("sample spans records %d..%d, want 1..%d", pts[0].Record, pts[len(pts)-1].Record, n)
	}
}

func TestPercentiles(t *testing.T) {
	r := delayRecorder{}
	for i := range int64(100) {
		r.add(i * 1000) // 0s .. 99s
	}
	r.add(3*time.Hour.Milliseconds() + 59_999) // rounded down to the minute above an hour
	h := r.histogram()
	if h.P50 != 50_000 || h.P95 != 95_000 || h.P99 != 99_000 {
		t.Errorf("p50/p95/p99 = %d/%d/%d, want 50000/95000/99000", h.P50, h.P95, h.P99)
	}
	if h.Buckets[0].Count != 60 || h.Buckets[1].Count != 40 || h.Buckets[5].Count != 1 || h.Total != 101 {
		t.Errorf("buckets = %+v", h.Buckets)
	}
	r.add(1 << 50)
	r.add(1 << 50)
	if got := r.histogram(); got.P99 != (1<<50)-(1<<50)%60_000 || got.Buckets[7].Count != 2 {
		t.Errorf("outliers: p99 %d, buckets %+v", got.P99, got.Buckets)
	}
}

// tracedDelays is the histogram of counts (per delay.Buckets) with the
// traced delays' own percentiles.
func tracedDelays(counts []int64, p50, p95, p99 int64) delay.Histogram {
	h := delay.NewHistogram(counts)
	h.P50, h.P95, h.P99 = p50, p95, p99
	return h
}
