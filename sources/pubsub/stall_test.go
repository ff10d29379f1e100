package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// blocking blocks every archive write of st until release is closed, and
// says on started when the first one started.
func blocking(st *store) (started chan time.Time, release chan struct{}) {
	started, release = make(chan time.Time, 1), make(chan struct{})
	var once sync.Once
	put := st.put
	st.put = func(ctx context.Context, path string, data []byte) error {
		once.Do(func() { started <- time.Now() })
		<-release
		return put(ctx, path, data)
	}
	return started, release
}

// stallLog collects the stall lines a reader logs, and every value its
// stall gauge is set to.
type stallLog struct {
	mu     sync.Mutex
	lines  []slog.Record
	gauge  []int64
	line   chan time.Time // each stall line's time
	gauged chan int64     // each gauge value
}

func newStallLog() *stallLog {
	return &stallLog{line: make(chan time.Time, 16), gauged: make(chan int64, 1024)}
}

func (l *stallLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *stallLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *stallLog) WithGroup(string) slog.Handler            { return l }
func (l *stallLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "pubsub source stalled: it holds messages and has emitted none" {
		return nil
	}
	l.mu.Lock()
	l.lines = append(l.lines, r.Clone())
	l.mu.Unlock()
	l.line <- time.Now()
	return nil
}

func (l *stallLog) set(ms int64) {
	l.mu.Lock()
	l.gauge = append(l.gauge, ms)
	l.mu.Unlock()
	select {
	case l.gauged <- ms:
	default:
	}
}

func (l *stallLog) wire(r *reader, after time.Duration) {
	r.log, r.o.StallAfter, r.stalled = slog.New(l), after, l.set
}

func attrsOf(r slog.Record) map[string]string {
	out := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		out[a.Key] = a.Value.String()
		return true
	})
	return out
}

// An archive write that blocks stalls the reader key with messages on
// hand: within --pubsub-stall-after it logs one line naming the key and
// the archive write it waits on, sets its stall gauge, and logs no second
// line however long the stall lasts; once the write goes through, the
// records are emitted and the gauge goes back to 0.
func TestStallIsReported(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	p := newPlainReader(t, e, t.TempDir())
	started, release := blocking(p.st)
	const after = 400 * time.Millisecond
	l := newStallLog()
	p.tweak = func(r *reader) { l.wire(r, after); r.o.Pullers = 1 }
	e.publish(purchase("A", "2026-11-04T10:15:00Z", "1"), purchase("B", "2026-11-04T10:16:00Z", "2"), purchase("C", "2026-11-04T10:17:00Z", "3"))

	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, _, err := p.call(context.Background())
		done <- result{err}
	}()
	var blocked time.Time
	select {
	case blocked = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the archive write never started")
	}
	var reported time.Time
	select {
	case reported = <-l.line:
	case <-time.After(30 * time.Second):
		t.Fatalf("no stall line 30s into a blocked archive write (bound %s)", after)
	}
	// Not before the bound (a slow machine only makes it later; how soon
	// after the bound a check reports is TestStallWatchCheck's, on an
	// injected clock).
	if took := reported.Sub(blocked); took < after-50*time.Millisecond {
		t.Errorf("stall reported %s after the archive write blocked, before the bound %s", took, after)
	}
	l.mu.Lock()
	a := attrsOf(l.lines[0])
	l.mu.Unlock()
	if a["reader_key"] != "pubsub" || a["waiting_on"] != waitArchiveWrite || a["messages"] != "3" || a["object"] == "" {
		t.Errorf("stall line %v: want reader key pubsub, waiting on the archive write of an object of 3 messages", a)
	}
	// The stall goes on: the gauge is set at every check (growing), and
	// still only one line is logged.
	var last int64
	for n := 0; n < 6; {
		select {
		case ms := <-l.gauged:
			if ms < after.Milliseconds() || ms < last {
				t.Errorf("stall gauge %d ms after %d, want at least %d and growing", ms, last, after.Milliseconds())
			}
			last = ms
			n++
		case <-time.After(30 * time.Second):
			t.Fatal("the stall gauge is not kept up during the stall")
		}
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) != 1 {
		t.Errorf("%d stall lines, want 1", len(l.lines))
	}
	if g := l.gauge[len(l.gauge)-1]; g != 0 {
		t.Errorf("stall gauge ends at %d, want 0 once the write went through", g)
	}
	if len(p.out) != 3 {
		t.Errorf("emitted %d records after the stall, want 3", len(p.out))
	}
}

// The control: a reader whose every archive write is slow, but which emits
// a batch at a time well within the bound, for longer than the bound in
// all, reports no stall.
func TestNoStallWhileEmitting(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	p := newPlainReader(t, e, t.TempDir())
	broken(p.st, false, 50*time.Millisecond)
	const after, n = 1500 * time.Millisecond, 30
	l := newStallLog()
	var emits []time.Time
	p.tweak = func(r *reader) {
		l.wire(r, after)
		// One message a pull, one pull at a time: 30 batches, each two
		// slow writes (sidecar, object), in one long call.
		r.o.Pullers, r.o.PullBatch, r.o.MaxHeld, r.budget = 1, 1, 1, time.Minute
		emit := r.emit
		r.emit = func(rec model.Record) {
			emits = append(emits, time.Now())
			emit(rec)
		}
	}
	for i := range n {
		e.publish(purchase(fmt.Sprint("E", i), "2026-11-04T10:15:00Z", "1"))
	}
	start := time.Now()
	p.drain(t) // waits until all n are emitted (the progress the test waits on)
	if len(p.out) != n {
		t.Fatalf("emitted %d records, want %d", len(p.out), n)
	}
	took := time.Since(start)
	if took < after {
		t.Fatalf("the emits took %s, not more than the bound %s: the control shows nothing", took, after)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	gap := time.Duration(0)
	for i := 1; i < len(emits); i++ {
		gap = max(gap, emits[i].Sub(emits[i-1]))
	}
	if len(l.lines) != 0 || len(l.gauge) != 0 {
		t.Errorf("%d stall lines, gauge set %v, while a record was emitted at least every %s (bound %s)", len(l.lines), l.gauge, gap, after)
	}
}

// The watch itself, on an injected clock: progress between two checks ends
// an episode, nothing on hand is no stall, and an episode is reported once.
func TestStallWatchCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	w := newStallWatch(time.Minute)
	if s := w.check(t0.Add(time.Hour)); s != (stall{}) {
		t.Errorf("nothing on hand: %+v", s)
	}
	w.hold(t0, 1, onHand{waiting: waitArchiveWrite, object: "o1", messages: 5})
	w.hold(t0, 2, onHand{waiting: waitArchiveWrite, object: "o2", messages: 7})
	w.waitOn(2, waitEmit)
	if s := w.check(t0.Add(59 * time.Second)); s != (stall{}) {
		t.Errorf("below the bound: %+v", s)
	}
	want := stall{report: true, stalled: time.Minute, oldest: onHand{waiting: waitArchiveWrite, object: "o1", messages: 5}}
	if s := w.check(t0.Add(time.Minute)); s != want {
		t.Errorf("at the bound: %+v, want %+v", s, want)
	}
	if s := w.check(t0.Add(2 * time.Minute)); s.report || s.stalled != 2*time.Minute {
		t.Errorf("still stalled: %+v, want no second report", s)
	}
	w.emitted()
	if s := w.check(t0.Add(3 * time.Minute)); s != (stall{}) {
		t.Errorf("after an emit: %+v", s)
	}
	w.done(1)
	want = stall{report: true, stalled: time.Minute, oldest: onHand{waiting: waitEmit, object: "o2", messages: 7}}
	if s := w.check(t0.Add(4*time.Minute + time.Second)); s.report || s.stalled != 0 {
		t.Errorf("just after progress: %+v", s)
	}
	if s := w.check(t0.Add(5*time.Minute + time.Second)); s != want {
		t.Errorf("a second episode: %+v, want %+v", s, want)
	}
}
