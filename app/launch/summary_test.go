package launch

import (
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/internal/metrics"
)

// The summary shows the dedup step's fan-out per 1,000 records read.
func TestSummaryShowsDedupFanOut(t *testing.T) {
	c := metrics.Counts{Read: 2000, Counted: 2000, DedupElements: 61, Counters: map[string]int64{"dedup_window_fanouts": 3}}
	s := &Summary{Counts: c, Conserved: true, Identity: c.Identity()}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	const want = "dedup step: took in 61 batches, 30.5 per 1,000 records read (one per shard and partition a source bundle touches); 3 windows announced to the watermark gate's 8 keys, whatever the shard count\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}
