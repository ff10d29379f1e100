package pubsubtest

import (
	"context"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
)

// TestPurchase200 checks the benchmarks' message: 200 bytes, a valid
// purchase, a distinct id per number.
func TestPurchase200(t *testing.T) {
	ids := map[string]bool{}
	for i := range 500 {
		p := Purchase200(i * 977)
		if len(p) != 200 {
			t.Fatalf("Purchase200(%d) is %d bytes: %s", i*977, len(p), p)
		}
		ev, q := event.Parse(model.Record{Partition: "pubsub", Position: "p", Line: p, ReadAt: time.Now().UnixMilli()}, event.DefaultConfig())
		if q != nil {
			t.Fatalf("Purchase200(%d) quarantined: %+v", i*977, q)
		}
		ids[ev.EventID] = true
	}
	if len(ids) != 500 {
		t.Errorf("%d distinct event ids in 500 messages", len(ids))
	}
}

// TestBarePullDrains runs the server process and checks that the
// yardstick reads and acknowledges exactly what was published.
func TestBarePullDrains(t *testing.T) {
	const topic, sub = "projects/p/topics/t", "projects/p/subscriptions/s"
	addr := StartServer(t, BuildServer(t), topic, sub, 10*time.Second)
	t.Setenv("PUBSUB_EMULATOR_HOST", addr)
	c, err := gpubsub.NewClient(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	Publish(t, c, topic, 2500)
	got, rate := BarePull(t, c, sub, 4, 1000, 2500)
	if got != 2500 || rate <= 0 {
		t.Fatalf("BarePull acknowledged %d at %.0f msg/s, want 2500", got, rate)
	}
	// Acknowledged means gone: a later pull finds none of them.
	Publish(t, c, topic, 1)
	if got, _ := BarePull(t, c, sub, 1, 1000, 1); got != 1 {
		t.Errorf("after the drain a pull found %d messages, want the 1 new one", got)
	}
}
