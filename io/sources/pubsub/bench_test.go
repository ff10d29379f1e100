package pubsub

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
)

// benchMessages is how many messages each side of the benchmark reads.
const benchMessages = 20_000

// payload200 is a realistic purchase of exactly 200 bytes.
func payload200(i int) []byte {
	p := fmt.Sprintf(`{"event_id":"evt-%012d","event_time":"2026-11-04T10:%02d:%02dZ","user_id":"user-%08d","amount":"%d.99","country":"DE","app":"shop","pad":"`,
		i, i/60%60, i%60, i%100_000, i%500)
	return []byte(p + strings.Repeat("x", 200-len(p)-2) + `"}`)
}

// pstestProcess serves pstest in another process (testing/pstestserver), so
// that the CPU this process uses is the reader's alone.
func pstestProcess(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "pstestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../testing/pstestserver").CombinedOutput(); err != nil {
		b.Fatalf("build pstestserver: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--topic="+testTopic, "--subscription="+testSub, "--ack-deadline=60s")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if !ok {
		b.Fatalf("pstestserver: %q", line)
	}
	return addr
}

func publishN(b *testing.B, c *gpubsub.Client, n int) {
	b.Helper()
	pub := c.Publisher(testTopic)
	defer pub.Stop()
	ctx := context.Background()
	res := make([]*gpubsub.PublishResult, 0, n)
	for i := range n {
		res = append(res, pub.Publish(ctx, &gpubsub.Message{Data: payload200(i)}))
	}
	for _, r := range res {
		if _, err := r.Get(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareLoop is the yardstick: pullers that only pull and acknowledge.
func bareLoop(b *testing.B, c *gpubsub.Client, pullers, n int) {
	var got atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	for range pullers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got.Load() < int64(n) {
				resp, err := c.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: testSub, MaxMessages: DefaultPullBatch})
				if err != nil {
					b.Error(err)
					return
				}
				var ids []string
				for _, m := range resp.GetReceivedMessages() {
					ids = append(ids, m.GetAckId())
				}
				if len(ids) > 0 {
					if err := c.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: testSub, AckIds: ids}); err != nil {
						b.Error(err)
						return
					}
				}
				got.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
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
//	go test ./io/sources/pubsub -run '^$' -bench ReaderVsBarePull -benchtime 5x
func BenchmarkReaderVsBarePull(b *testing.B) {
	addr := pstestProcess(b)
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
		publishN(b, c, benchMessages)
		b.StartTimer()
		t0 := time.Now()
		bareLoop(b, c, 4, benchMessages)
		bare := float64(benchMessages) / time.Since(t0).Seconds()

		b.StopTimer()
		publishN(b, c, benchMessages)
		dir := b.TempDir()
		st, err := openStore(ctx, dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		rest := newRestriction(0, time.Now().UnixMilli())
		rest.Started = true
		var emitted int
		b.StartTimer()
		cpu0, t1 := cpuTime(), time.Now()
		for emitted < benchMessages {
			r := newReader(rest, testPolicy, event.DefaultConfig())
			r.subscription, r.store, r.sub = testSub, st, e.client.SubscriptionAdminClient
			r.fault = func(string) {}
			r.claim = func(next restriction) bool { return true }
			r.emit = func(model.Record) { emitted++ }
			if _, err := r.run(ctx); err != nil {
				b.Fatal(err)
			}
			r.watermarkState(time.Now().UnixMilli())
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
