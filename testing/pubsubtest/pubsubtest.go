// Package pubsubtest holds what the Pub/Sub benchmarks share: a pstest
// server in a process of its own (testing/pstestserver), so that the CPU the
// benchmarking process uses is its own; realistic 200-byte purchases; and
// the yardstick every Pub/Sub rate is compared with, a bare loop that only
// pulls and acknowledges.
package pubsubtest

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
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// serverPkg is built by import path, so that it resolves from any package
// of the module.
const serverPkg = "github.com/revenue-stream/hourly/testing/pstestserver"

// BuildServer builds testing/pstestserver into a temporary folder of the
// test and returns the binary's path.
func BuildServer(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "pstestserver")
	if out, err := exec.Command("go", "build", "-o", bin, serverPkg).CombinedOutput(); err != nil {
		tb.Fatalf("build pstestserver: %v\n%s", err, out)
	}
	return bin
}

// StartServer runs the pstestserver binary bin with one topic and one
// subscription and returns its address (host:port); the process is killed
// when the test ends. Its own process outlives any launcher a test kills,
// as a real subscription does.
func StartServer(tb testing.TB, bin, topic, sub string, ackDeadline time.Duration) string {
	tb.Helper()
	cmd := exec.Command(bin, "--topic="+topic, "--subscription="+sub, "--ack-deadline="+ackDeadline.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		tb.Fatalf("pstest server: %q, %v", line, err)
	}
	return addr
}

// Purchase200 is a realistic purchase message of exactly 200 bytes, number
// i of a run: its event_id is unique per i.
func Purchase200(i int) []byte {
	p := fmt.Sprintf(`{"event_id":"evt-%012d","event_time":"2026-11-04T10:%02d:%02dZ","user_id":"user-%08d","amount":"%d.99","country":"DE","app":"shop","pad":"`,
		i, i/60%60, i%60, i%100_000, i%500)
	return []byte(p + strings.Repeat("x", 200-len(p)-2) + `"}`)
}

// Publish publishes Purchase200(0..n-1) to topic and waits until the server
// has every one.
func Publish(tb testing.TB, c *gpubsub.Client, topic string, n int) {
	tb.Helper()
	pub := c.Publisher(topic)
	defer pub.Stop()
	ctx := context.Background()
	res := make([]*gpubsub.PublishResult, 0, n)
	for i := range n {
		res = append(res, pub.Publish(ctx, &gpubsub.Message{Data: Purchase200(i)}))
	}
	for _, r := range res {
		if _, err := r.Get(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

// BarePull is the yardstick: pullers that only pull (batch messages per
// request) and acknowledge, until n messages are in. It returns how many
// it acknowledged and the rate in messages per second.
func BarePull(tb testing.TB, c *gpubsub.Client, sub string, pullers, batch, n int) (int, float64) {
	var got atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	for range pullers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got.Load() < int64(n) {
				resp, err := c.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: int32(batch)})
				if err != nil {
					tb.Error(err)
					return
				}
				var ids []string
				for _, m := range resp.GetReceivedMessages() {
					ids = append(ids, m.GetAckId())
				}
				if len(ids) > 0 {
					if err := c.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: sub, AckIds: ids}); err != nil {
						tb.Error(err)
						return
					}
				}
				got.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	return int(got.Load()), float64(got.Load()) / time.Since(start).Seconds()
}
