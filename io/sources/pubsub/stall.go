package pubsub

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallAfter is how long a reader may hold messages without
// emitting any before it says so (--pubsub-stall-after).
const DefaultStallAfter = time.Minute

// What a stalled call waits on (the stall line's waiting_on).
const (
	waitArchiveWrite = "archive write"
	waitAcknowledge  = "acknowledge"
	waitEmit         = "emit (the steps after the source)"
	waitArchiveRead  = "archive read (re-emit)"
)

// replaySeq is the on-hand entry of a call's re-emit from the archive:
// below every pulled batch's sequence number, so it is the oldest.
const replaySeq = -1

// onHand is one thing a call holds and has not emitted yet: a pulled
// batch (by its sequence number) or the re-emit of an archive object.
type onHand struct {
	waiting  string
	object   string
	messages int
}

// stallWatch notices a call that holds messages (a pull returned them, or
// the archive has objects to re-emit) and has emitted nothing for a bound:
// a source that is RUNNING, quiet and reads nothing is never silent. The
// call's goroutines say what they hold and what they wait on; the watch
// samples the emit count every tick, and reports a stall once per episode
// (see reader.watchStalls).
type stallWatch struct {
	after time.Duration
	// emits counts the records emitted, and the batches done with (a batch
	// of blank payloads emits nothing and is progress all the same).
	emits atomic.Int64

	mu    sync.Mutex
	held  map[int64]onHand
	since time.Time // the last progress, or when something came on hand
	seen  int64     // emits at since
	// stalled: the episode was reported; it ends with the next progress.
	stalled bool
}

func newStallWatch(after time.Duration) *stallWatch {
	return &stallWatch{after: after, held: map[int64]onHand{}}
}

// hold records that the call holds seq's messages, waiting on waiting; it
// updates an entry already held.
func (w *stallWatch) hold(now time.Time, seq int64, h onHand) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		// Nothing was on hand: the clock starts now, not at the last emit.
		w.since, w.seen = now, w.emits.Load()
	}
	w.held[seq] = h
}

// waitOn changes what a held entry waits on.
func (w *stallWatch) waitOn(seq int64, waiting string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h, ok := w.held[seq]; ok {
		h.waiting = waiting
		w.held[seq] = h
	}
}

// done drops a held entry: emitted, or dropped with the call's failure.
func (w *stallWatch) done(seq int64) {
	w.mu.Lock()
	delete(w.held, seq)
	w.mu.Unlock()
	w.emits.Add(1)
}

// emitted counts one emitted record.
func (w *stallWatch) emitted() { w.emits.Add(1) }

// stall is one check's finding.
type stall struct {
	// report: a new episode, to be logged (once).
	report bool
	// stalled: how long the call has held messages without emitting
	// (0: it has not, or not for the bound).
	stalled time.Duration
	oldest  onHand
}

// check samples the call at now: progress since the last check ends an
// episode; messages held without progress for the bound make one, reported
// the first time only.
func (w *stallWatch) check(now time.Time) stall {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.emits.Load(); n != w.seen || len(w.held) == 0 {
		w.since, w.seen, w.stalled = now, n, false
		return stall{}
	}
	d := now.Sub(w.since)
	if d < w.after {
		return stall{}
	}
	oldest := int64(0)
	first := true
	for seq := range w.held {
		if first || seq < oldest {
			oldest, first = seq, false
		}
	}
	s := stall{report: !w.stalled, stalled: d, oldest: w.held[oldest]}
	w.stalled = true
	return s
}
