package reconcile_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

// BenchmarkRecompute measures the batch recomputation on prism, end to end:
// pipeline submission, reading and validating every line of a generated log
// (oracle.BenchLog: 4 partitions, 5% retries, 0.5% conflicts, 1% late, 0.1% too
// late), the choice per event_id, the sums per window and the result file
// read back by the driver. events/s counts records read.
func BenchmarkRecompute(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "log")
	st, err := gen.Write(dir, oracle.BenchLog(200_000))
	if err != nil {
		b.Fatal(err)
	}
	// The stream's audit rows, so the choice step gets real evidence.
	res, err := oracle.Replay(dir, oracle.DefaultSettings(readAt))
	if err != nil {
		b.Fatal(err)
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		b.Fatal(err)
	}
	set := reconcile.Defaults().Settings
	set.Source, set.Now = dir, readAt
	out := b.TempDir()

	var read int64
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		p, s := beam.NewPipelineWithRoot()
		totals, stats := reconcile.Recompute(s, beam.CreateList(s, parts),
			reconcile.StreamEvidence(s, res.Conflicts, res.TooLate, set.Shards), set)
		path := filepath.Join(out, "result", time.Now().Format("150405.000000000")+".jsonl")
		reconcile.WriteResult(s, totals, stats, beam.PCollection{}, path) // no sink: no comparison
		if _, err := runnertest.Run(p); err != nil {
			b.Fatal(err)
		}
		r, err := reconcile.ReadResult(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		if r.Stats.IDs != int64(st.Events) {
			b.Fatalf("recomputed %d ids, generated %d", r.Stats.IDs, st.Events)
		}
		read += r.Stats.Read
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "events/s")
}
