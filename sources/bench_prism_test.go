package sources_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/testing/runnertest"
	"github.com/revenue-stream/hourly/watermark"
)

var counted atomic.Int64

func init() { register.Function1x0[model.Record](countRecord) }

func countRecord(model.Record) { counted.Add(1) }

// BenchmarkReadFolder replays a 4-partition folder through ReadFolder alone
// on prism: the source's share of the end-to-end figure.
func BenchmarkReadFolder(b *testing.B) {
	dir := b.TempDir()
	const parts, files, perFile = 4, 5, 10_000
	for p := range parts {
		for f := range files {
			var sb strings.Builder
			for i := range perFile {
				fmt.Fprintf(&sb, `{"event_id":"e%d-%d-%d","event_time":"2026-11-04T10:%02d:%02dZ","user_id":"u%d","amount":"12.50"}`+"\n", p, f, i, i/60%60, i%60, i%977)
			}
			if err := write(dir, fmt.Sprintf("p%d", p), fmt.Sprintf("%06d.jsonl", f), sb.String()); err != nil {
				b.Fatal(err)
			}
		}
	}
	o := sources.FolderOptions{
		Watermark: watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Event:     event.DefaultConfig(),
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		counted.Store(0)
		p, s := beam.NewPipelineWithRoot()
		records, _ := sources.ReadFolder(s, dir, o)
		beam.ParDo0(s, countRecord, records)
		if _, err := runnertest.Run(p); err != nil {
			b.Fatal(err)
		}
		if n := counted.Load(); n != parts*files*perFile {
			b.Fatalf("counted %d records", n)
		}
	}
	b.ReportMetric(float64(b.N*parts*files*perFile)/time.Since(start).Seconds(), "records/s")
}
