package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/pipeline"
)

// TestMemoryWarning: a design rate whose retention holds more dedup state
// than the machine has gets one line at start on the embedded runner; a
// rate that fits, no rate at all (a replay holds what its log has) and a
// distributed runner get none.
func TestMemoryWarning(t *testing.T) {
	const gib = int64(1) << 30
	// 20,000 ev/s over 25 h + 1 h: 1.87 billion ids, 24 B each in prism's
	// heap (41.8 GiB) plus a full 1 GiB cache.
	if got := embeddedStateBytes(20_000, 25*time.Hour, time.Hour, gib); got != 1_872_000_000*24+gib {
		t.Fatalf("state at 20,000 ev/s: %d bytes", got)
	}
	o := Options{Runner: "prism", Pipeline: pipeline.Defaults()}
	o.Pipeline.DesignRate = 20_000
	w := o.memoryWarning(16 * gib)
	if !strings.Contains(w, "42.8 GiB") || !strings.Contains(w, "16.0 GiB") || strings.Contains(w, "\n") {
		t.Errorf("20,000 ev/s on 16 GiB: warning %q, want one line naming 42.8 GiB and 16.0 GiB", w)
	}
	o.Pipeline.DesignRate = 200 // 18.7 M ids: 0.4 GiB + 0.9 GiB of cache
	if w := o.memoryWarning(16 * gib); w != "" {
		t.Errorf("200 ev/s fits 16 GiB, warned %q", w)
	}
	o.Pipeline.DesignRate = 0
	if w := o.memoryWarning(gib); w != "" {
		t.Errorf("no design rate set: warned %q", w)
	}
	o.Pipeline.DesignRate, o.Runner = 20_000, "dataflow"
	if w := o.memoryWarning(gib); w != "" {
		t.Errorf("a distributed runner's workers are not this machine: warned %q", w)
	}
}
