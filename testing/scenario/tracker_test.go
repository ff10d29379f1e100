package scenario

import (
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/watermark"
)

func TestIdlePartitionLeavesMinimumAndComesBack(t *testing.T) {
	start := rowtest.MS("2026-11-04T12:00:00Z")
	tr := NewTracker(watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute})
	tr.Observe("fast", rowtest.MS("2026-11-04T11:00:00Z"), true, start)
	tr.Observe("slow", rowtest.MS("2026-11-04T10:00:00Z"), true, start)
	if w := tr.Watermark(start); w != rowtest.MS("2026-11-04T09:50:00Z") {
		t.Fatalf("pipeline watermark = %s, want the slow partition's 09:50", model.FormatTime(w))
	}
	// The fast partition keeps producing; the slow one goes quiet.
	now := start + (5 * time.Minute).Milliseconds() - 1
	tr.Observe("fast", rowtest.MS("2026-11-04T11:05:00Z"), true, now)
	if w := tr.Watermark(now); w != rowtest.MS("2026-11-04T09:50:00Z") {
		t.Fatalf("1 ms before the idle timeout the slow partition still holds: got %s", model.FormatTime(w))
	}
	now++
	if !tr.Idle("slow", now) {
		t.Fatal("slow partition not idle at the timeout")
	}
	if w := tr.Watermark(now); w != rowtest.MS("2026-11-04T10:55:00Z") {
		t.Fatalf("idle partition still holds the minimum: %s", model.FormatTime(w))
	}
	if tr.IdleTransitions != 1 {
		t.Fatalf("idle transitions = %d, want 1", tr.IdleTransitions)
	}
	// It comes back with an old record: judged against its own watermark
	// (rule (a)), and the pipeline watermark never goes back.
	before := tr.Observe("slow", rowtest.MS("2026-11-04T10:01:00Z"), true, now+1)
	if before != rowtest.MS("2026-11-04T09:50:00Z") {
		t.Fatalf("returning record's partition watermark = %s, want 09:50", model.FormatTime(before))
	}
	if w := tr.Watermark(now + 1); w != rowtest.MS("2026-11-04T10:55:00Z") {
		t.Fatalf("pipeline watermark went back to %s", model.FormatTime(w))
	}
}
