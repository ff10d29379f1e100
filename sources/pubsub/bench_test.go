package pubsub

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/testing/pubsubtest"
)

// benchMessages is how many messages each side of the benchmark reads.
const benchMessages = 20_000

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReaderVsBarePull reads benchMessages 200-byte messages from a
// pstest server in another process twice per iteration: with a bare loop of
// 4 pullers that only pull and acknowledge (the yardstick of issue 15), and
// with the reader
// (pull, archive object on local disk, acknowledge, emit from the archive
// position, DefaultPullers pull streams), calls chained as a runner chains
// them. It reports both rates, their ratio, the reader's CPU per 1,000
// messages and the archive bytes per message.
//
//	go test ./sources/pubsub -run '^$' -bench ReaderVsBarePull -benchtime 5x
func BenchmarkReaderVsBarePull(b *testing.B) {
	// pstest serves from another process, so that the CPU this process
	// uses is the reader's alone.
	addr := pubsubtest.StartServer(b, pubsubtest.BuildServer(b), testTopic, testSub, 60*time.Second)
	b.Setenv("PUBSUB_EMULATOR_HOST", addr)
	ctx := context.Background()
	c, err := gpubsub.NewClient(ctx, testProject)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	e := &emulator{client: c}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pubsubtest.Publish(b, c, testTopic, benchMessages)
		b.StartTimer()
		_, bare := pubsubtest.BarePull(b, c, testSub, 4, DefaultPullBatch, benchMessages)

		b.StopTimer()
		pubsubtest.Publish(b, c, testTopic, benchMessages)
		dir := b.TempDir()
		st, err := openStore(dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		rest := newRestriction(0, time.Now().UnixMilli())
		rest.Started = true
		var emitted int
		b.StartTimer()
		cpu0, t1 := cpuTime(), time.Now()
		for emitted < benchMessages {
			r := newReader(rest, Options{Watermark: testPolicy, Event: event.DefaultConfig()})
			r.subscription, r.store, r.sub = testSub, st, e.client.SubscriptionAdminClient
			r.fault = func(string) {}
			r.claim = func(next restriction) bool { return true }
			r.emit = func(model.Record) { emitted++ }
			if _, err := r.run(ctx); err != nil {
				b.Fatal(err)
			}
			r.endCall(sdfread.Budget, time.Now().UnixMilli())
			rest = r.rest
		}
		took, cpu := time.Since(t1), cpuTime()-cpu0
		b.StopTimer()
		var side int64
		entries, _ := os.ReadDir(filepath.Join(dir, Partition))
		for _, en := range entries {
			if fi, err := en.Info(); err == nil {
				side += fi.Size()
			}
		}
		reader := float64(emitted) / took.Seconds()
		b.ReportMetric(bare, "bare_msg/s")
		b.ReportMetric(reader, "reader_msg/s")
		b.ReportMetric(reader/bare, "ratio")
		b.ReportMetric(float64(cpu.Milliseconds())/float64(emitted)*1000, "cpu_ms/1k_msg")
		b.ReportMetric(float64(side)/float64(emitted), "archive_B/msg")
		b.StartTimer()
	}
}
