package sources

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
)

// BenchmarkReader measures the reading path of one partition without a
// runner: list, read, stamp (which validates), claim through a locked
// tracker, as readFn does. It must stay far above the 20,000 events/s peak
// so that the runner, not the source, is the bottleneck.
func BenchmarkReader(b *testing.B) {
	dir := b.TempDir()
	const perFile, files = 10_000, 5
	for f := range files {
		var sb strings.Builder
		for i := range perFile {
			fmt.Fprintf(&sb, `{"event_id":"e%d-%d","event_time":"2026-11-04T10:%02d:%02dZ","user_id":"u%d","amount":"12.50","country":"DE"}`+"\n", f, i, i/60%60, i%60, i%977)
		}
		if err := produce(dir, "p0", fmt.Sprintf("%06d.jsonl", f), sb.String()); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	records := 0
	start := time.Now()
	for range b.N {
		rest := newRestriction(time.Now().UnixMilli())
		for {
			rt := sdf.NewLockRTracker(sdfread.NewCheckpointTracker("source", rest, true))
			r := newReader(dir, "p0", rest, FolderOptions{Watermark: testPolicy, Event: testConfig()})
			r.claim = func(next restriction) bool { return sdfread.Claim(rt, next) }
			r.emit = func(model.Record) { records++ }
			out, err := r.run()
			if err != nil {
				b.Fatal(err)
			}
			if out == sdfread.Finished {
				break
			}
			rest = r.rest
		}
	}
	b.ReportMetric(float64(records)/time.Since(start).Seconds(), "records/s")
}
