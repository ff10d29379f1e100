package launch

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// BenchmarkPipelineVsBaseline is testing/bench in Go's harness, smaller: the
// streaming job on prism (folder source, pipeline, SQLite sink) over a
// generated log of 100,000 purchases (5 % retries, 0.5 % conflicts, 1 % late,
// 0.1 % too late, 4 partitions), and the plain-Go baseline over the same log
// in the same iteration. It reports both rates, their ratio and the job's
// allocations per event:
//
//	go test ./launch -run X -bench PipelineVsBaseline -benchtime 3x -count 5
//
// (testing/bench runs the 1,000,000-event version, each mode in a process of its
// own, with peak RSS.)
func BenchmarkPipelineVsBaseline(b *testing.B) {
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(cli.NewLogger(os.Stderr, slog.LevelWarn)) // the job's start lines would split the result lines
	dir := filepath.Join(b.TempDir(), "log")
	if _, err := gen.Write(dir, oracle.BenchLog(100_000)); err != nil {
		b.Fatal(err)
	}
	var pipeSec, baseSec float64
	var read, allocs int64
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		base, err := oracle.Replay(dir, oracle.DefaultSettings(start))
		if err != nil {
			b.Fatal(err)
		}
		baseSec += time.Since(start).Seconds()

		o := Defaults()
		o.Source = dir
		o.Sink = sink.Spec{Scheme: sink.SchemeSQLite, Path: filepath.Join(b.TempDir(), "revenue.db")}
		o.LogLevel = slog.LevelWarn
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start = time.Now()
		sum, err := Run(context.Background(), o, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		pipeSec += time.Since(start).Seconds()
		runtime.ReadMemStats(&after)
		if sum.Counts.Counted != int64(base.Counted) || !sum.Conserved {
			b.Fatalf("pipeline counted %d (conserved %v), baseline %d", sum.Counts.Counted, sum.Conserved, base.Counted)
		}
		read += sum.Counts.Read
		allocs += int64(after.TotalAlloc - before.TotalAlloc)
	}
	b.ReportMetric(float64(read)/pipeSec, "pipeline-ev/s")
	b.ReportMetric(float64(read)/baseSec, "baseline-ev/s")
	b.ReportMetric(baseSec/pipeSec, "ratio")
	b.ReportMetric(float64(allocs)/float64(read), "B-alloc/event")
}
