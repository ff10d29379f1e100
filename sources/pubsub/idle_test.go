package pubsub

import (
	"context"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/watermark"
)

// A key restored after an outage longer than the idle timeout (its
// restriction's last activity is that old) has archived records to re-emit.
// A first call that ends on its budget before re-emitting any (a slow
// bucket) must not report the key idle: the watermark it hands the runner
// would pass the records it holds, which then come behind it.
func TestRestoredKeyWithArchiveToReEmitIsNotIdle(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	p := newPlainReader(t, e, dir)
	live := time.Now().Add(-30 * time.Minute).UTC()
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute}
	checkpoint := p.rest
	e.publish(purchase("A", live.Format(time.RFC3339), "100"), purchase("B", live.Add(time.Minute).Format(time.RFC3339), "50"))
	p.drain(t) // archived and acknowledged; the bundle never commits

	// The runner restores the checkpoint after a 20-minute outage.
	q := newPlainReader(t, e, dir)
	q.rest = checkpoint
	q.rest.LastActive = time.Now().Add(-20 * time.Minute).UnixMilli()
	q.tweak = func(r *reader) {
		r.o.Watermark = policy
		r.stamper = rawlog.ResumeStamper(policy, r.o.Event, r.rest.State)
		r.budget = 0 // the listing and the first object's open took the call's budget
	}
	out, r, err := q.call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(q.out) != 0 {
		t.Fatalf("the first call (%v) re-emitted %d records, want none", out, len(q.out))
	}
	reported := r.rest.Reported

	q.tweak = func(r *reader) {
		r.o.Watermark = policy
		r.stamper = rawlog.ResumeStamper(policy, r.o.Event, r.rest.State)
	}
	q.drain(t)
	if len(q.out) != 2 {
		t.Fatalf("re-emitted %d records, want 2", len(q.out))
	}
	for _, rec := range q.out {
		if rec.Valid != nil && reported != model.NoWatermark && rec.Valid.EventTime < reported {
			t.Errorf("%s (event time %s) re-emitted after the key reported the watermark %s",
				rec.Position, watermark.FormatMs(rec.Valid.EventTime), watermark.FormatMs(reported))
		}
	}
}

// A call whose records waited in it longer than the idle timeout after
// their pull (an archive write retried for a minute or two, an emit blocked
// by a slow sink) was active to its end. Reporting the key idle as it ends
// would move the watermark with processing time past what piled up in
// Pub/Sub meanwhile, and the next call would read it too late.
func TestSlowCallIsNotIdleness(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	e.publish(purchase("A", time.Now().UTC().Format(time.RFC3339), "100"))
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Minute}
	pulledAt := time.Now()
	r := newReader(newRestriction(0, pulledAt.UnixMilli()), Options{Watermark: policy, Event: event.DefaultConfig(), PullTimeout: 700 * time.Millisecond})
	st, err := openStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.subscription, r.sub, r.store, r.fault = testSub, e.client.SubscriptionAdminClient, st, func(string) {}
	r.now = func() time.Time { return pulledAt } // the call's clock stands at the pull
	out, err := r.run(context.Background())
	if err != nil || r.emitted != 1 {
		t.Fatalf("call = %v, %v with %d records, want 1", out, err, r.emitted)
	}
	// The archive write took two minutes: the call ends then.
	if r.endCall(out, pulledAt.Add(2*time.Minute).UnixMilli()); r.rest.Idle {
		t.Errorf("idle at the end of a call that emitted a record (%v), want active", out)
	}
}
