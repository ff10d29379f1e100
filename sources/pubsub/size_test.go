package pubsub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/sources/internal/sdfread"
)

func TestSubscriptionBacklog(t *testing.T) {
	for _, c := range []struct {
		name    string
		pulled  int64
		elapsed time.Duration
		waited  time.Duration
		timed   int64
		want    int64
	}{
		{"nothing pulled", 0, time.Second, 0, 0, 0},
		{"no publish times", 100, time.Second, 0, 0, 0},
		{"no time elapsed", 100, 0, time.Second, 100, 0},
		// A live stream: 1000/s, delivered 100 ms after publish on
		// average: 100 messages in flight.
		{"live", 1000, time.Second, 100 * time.Second, 1000, 100},
		// The same rate with messages that waited 10 s: ten times as many
		// wait (the backlog grew by 10 s of traffic).
		{"behind", 1000, time.Second, 10_000 * time.Second, 1000, 10_000},
		// A faster read of the same wait: more messages are waiting.
		{"faster", 5000, time.Second, 50_000 * time.Second, 5000, 50_000},
	} {
		if got := subscriptionBacklog(c.pulled, c.elapsed, c.waited, c.timed); got != c.want {
			t.Errorf("%s: subscriptionBacklog = %d, want %d", c.name, got, c.want)
		}
	}
	if archiveBacklog(3, 1000) != 3000 || archiveBacklog(0, 1000) != 0 || archiveBacklog(2, 0) != 2 {
		t.Error("archiveBacklog: want objects × pull batch")
	}
}

// The size is one unit for a live key plus what waits for it, none once
// closed, and it travels with the restriction through its coder (a
// checkpoint's residual is sized from the decoded restriction).
func TestRestrictionSizeIsThePending(t *testing.T) {
	fresh := newRestriction(2, 0)
	behind := fresh
	behind.Pending = pending{Archive: 3000, Subscription: 40_000}
	for _, c := range []struct {
		name string
		rest restriction
		want float64
	}{
		{"caught up", fresh, 1},
		{"behind", behind, 43_001},
		{"closed", behind.Closing(), 0},
	} {
		if got := (&readFn{}).RestrictionSize(readerKey{testSub, 2}, c.rest); got != c.want {
			t.Errorf("%s: size %v, want %v", c.name, got, c.want)
		}
		dec, err := decodeRestriction(encodeRestriction(c.rest))
		if err != nil || dec != c.rest {
			t.Errorf("%s: restriction round trip %v, %v", c.name, dec, err)
		}
	}
}

// The size follows a reader key's backlog, in plain Go against the
// emulator: messages that waited make a call that ends at its budget report
// more than one unit, a call that finds the subscription empty reports one;
// a key restored behind its archive reports the objects it has to re-emit,
// then one again once it has.
func TestSizeFollowsTheBacklog(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	var msgs []string
	for i := range 60 {
		msgs = append(msgs, purchase(fmt.Sprint("E", i), "2026-11-04T10:15:00Z", "1"))
	}
	e.publish(msgs...)

	p := newPlainReader(t, e, dir)
	small := func(r *reader) {
		r.o.MaxPerCall, r.o.PullBatch, r.o.Pullers, r.o.MaxHeld = 10, 10, 1, 10
		r.now = aheadBy(500 * time.Millisecond) // the messages have waited in the subscription
	}
	p.tweak = small
	out, _, err := p.call(context.Background())
	if err != nil || out != sdfread.Budget {
		t.Fatalf("first call: %v, %v; want it to end at its budget", out, err)
	}
	if got := p.rest.size(); got <= 1 || p.rest.Pending.Subscription <= 0 {
		t.Errorf("behind a backlog of %d messages the size is %v (%+v), want more than 1", len(msgs)-len(p.out), got, p.rest.Pending)
	}
	p.tweak = func(r *reader) { small(r); r.o.MaxPerCall = 1000 }
	p.drain(t)
	if got := p.rest.size(); got != 1 {
		t.Errorf("caught up, the size is %v (%+v), want 1", got, p.rest.Pending)
	}

	// Another worker restores the key from its first state: the whole
	// archive (at least six objects of up to ten) is to re-emit.
	q := newPlainReader(t, e, dir)
	q.tweak = small
	if out, _, err := q.call(context.Background()); err != nil || out != sdfread.Budget {
		t.Fatalf("restored call: %v, %v; want it to end at its budget", out, err)
	}
	if got := q.rest.Pending.Archive; got < 10 {
		t.Errorf("restored behind %d archived records, the key reports %d pending in the archive", len(msgs)-len(q.out), got)
	}
	q.tweak = func(r *reader) { small(r); r.o.MaxPerCall = 1000 }
	q.drain(t)
	if got := q.rest.size(); got != 1 || len(q.out) != len(msgs) {
		t.Errorf("after re-emitting %d records the size is %v (%+v), want 1", len(q.out), got, q.rest.Pending)
	}
}
