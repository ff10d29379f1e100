package pubsub

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallAfter is the default --pubsub-stall-after.
const DefaultStallAfter = time.Minute

// What a stalled call waits on (the stall line's waiting_on).
const (
	waitArchiveWrite = "archive write"
	waitAcknowledge  = "acknowledge"
	waitEmit         = "emit (the steps after the source)"
	waitArchiveRead  = "archive read (re-emit)"
)

// replaySeq is the on-hand entry of a re-emit: the oldest.
const replaySeq = -1

// onHand is a pulled batch or a re-emitted object not emitted yet.
type onHand struct {
	waiting  string
	object   string
	messages int
	batch    *batch // a pulled batch's ack ids, extended while it waits on the archive or the acknowledge
}

// stallWatch notices a call that holds messages and has emitted nothing for
// a bound, so a stuck source is never silent; reported once per episode
// (reader.watchStalls).
type stallWatch struct {
	after time.Duration
	// emits counts records emitted and batches done (blank ones too).
	emits atomic.Int64

	mu      sync.Mutex
	held    map[int64]onHand
	since   time.Time // the last progress, or when something came on hand
	seen    int64     // emits at since
	stalled bool      // the episode was reported
}

func newStallWatch(after time.Duration) *stallWatch {
	return &stallWatch{after: after, held: map[int64]onHand{}}
}

// hold records (or updates) what the call holds for seq.
func (w *stallWatch) hold(now time.Time, seq int64, h onHand) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 { // the clock starts now, not at the last emit
		w.since, w.seen = now, w.emits.Load()
	}
	w.held[seq] = h
}

// due returns the ack ids of the batches pulled at least age before now and
// not acknowledged yet (reader.extendHeld).
func (w *stallWatch) due(now time.Time, age time.Duration) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for _, h := range w.held {
		if h.batch != nil && h.waiting != waitEmit && now.Sub(h.batch.pulled) >= age {
			ids = append(ids, h.batch.ackIDs...)
		}
	}
	return ids
}

func (w *stallWatch) waitOn(seq int64, waiting string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h, ok := w.held[seq]; ok {
		h.waiting = waiting
		w.held[seq] = h
	}
}

func (w *stallWatch) done(seq int64) {
	w.mu.Lock()
	delete(w.held, seq)
	w.mu.Unlock()
	w.emits.Add(1)
}

func (w *stallWatch) emitted() { w.emits.Add(1) }

// stall is one check's finding: a new episode to log, and how long the call
// has held messages without emitting (0: not for the bound).
type stall struct {
	report  bool
	stalled time.Duration
	oldest  onHand
}

// check samples the call at now: progress ends an episode; messages held
// without progress for the bound make one.
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
	oldest := slices.Min(slices.Collect(maps.Keys(w.held))) // held is not empty
	s := stall{report: !w.stalled, stalled: d, oldest: w.held[oldest]}
	w.stalled = true
	return s
}
