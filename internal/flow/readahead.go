// Package flow is the embedded runner's flow control: a job's account of
// the records its sources read ahead of the dedup step (ReadAhead). It has
// no Beam or runner dependency, so the DoFns that count into it link no
// runner.
package flow

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

// Bounded read-ahead (issue #26). Prism has no backpressure: a source
// reads as fast as it can, and whatever it read waits, encoded, in prism's
// per-key queue in front of the first stateful step (the watermark gate,
// then the dedup step), which on two cores falls behind. A replay's peak
// memory then grew with the length of the log
// (1,056 queued batches, 96 MB, 4.5 days of event time between the source
// and dedup at the peak of a 12-day replay). A ReadAhead is one job's
// account of that queue in this process: a source adds the valid records
// of each call as the call ends (Queued: the events the dedup step will
// take in), the dedup step subtracts what it takes in (Taken), the
// too-late gates what they route to too_late, and a source
// reads only while the difference leaves room for another call (Room).
// Counting at the source, not where the events reach the dedup step's
// input, leaves no records in flight uncounted whatever prism fuses: only
// calls running at the same time (at most one per partition) read past the
// budget, each by at most one call.
//
// It is flow control only. Reading later changes no verdict: a record's
// verdict depends on its partition's records and the pipeline watermark,
// never on when it was read.
//
// Some of what waits cannot be taken in before the watermark moves: prism
// hands a stateful step a key's elements in timestamp order, timers
// included, so a batch stamped after a pending window-end timer of its
// gate key waits until the watermark passes that end, and the watermark moves
// only when the sources read on. When the queue is full of such records a
// plain count would hold the sources forever. So when the dedup step has
// taken nothing for Blocked while no call fits, the partitions holding the
// watermark (the lowest on their source's board) read on past the budget
// until the dedup step takes records again; the others wait. What waits
// past the budget is then what the watermark's lag holds back (about the
// out-of-order bound's worth of events, and the partitions' skew), which
// no bound can remove, and PastBudget counts the calls that read it.

// DefaultReadAhead is the default --read-ahead: records read but not yet
// taken in by the dedup step. About 10 MB of encoded events in prism's
// queue (about 100 bytes each without their payload), and 20 reader calls
// of 5,000 records: enough for the dedup step never to wait for input.
const DefaultReadAhead = 100_000

// Blocked is how long the dedup step must have taken nothing in, with no
// call fitting under the budget, before the partitions holding the
// watermark read on past it (see ReadAhead). A running dedup step takes a
// batch every few milliseconds.
const Blocked = 100 * time.Millisecond

// ReadAhead is one job's read-ahead account in this process. The zero
// value is ready; a nil *ReadAhead bounds nothing.
type ReadAhead struct {
	queued, taken atomic.Int64
	// peak is the largest Ahead seen when records were queued.
	peak atomic.Int64
	// lastTaken is when Taken was last called (unix ms), or the account's
	// creation.
	lastTaken atomic.Int64
	// past counts the calls granted past the budget (Room).
	past atomic.Int64
	now  func() time.Time
}

var readAheads = struct {
	mu sync.Mutex
	m  map[string]*ReadAhead
}{m: map[string]*ReadAhead{}}

// NewReadAheadKey names a new account (a job in this process).
func NewReadAheadKey() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "ra-" + hex.EncodeToString(b)
}

// ReadAheadOf returns the account named key in this process, created on
// first use, or nil for "" (no bound).
func ReadAheadOf(key string) *ReadAhead {
	if key == "" {
		return nil
	}
	readAheads.mu.Lock()
	defer readAheads.mu.Unlock()
	a := readAheads.m[key]
	if a == nil {
		a = &ReadAhead{now: time.Now}
		a.lastTaken.Store(a.now().UnixMilli())
		readAheads.m[key] = a
	}
	return a
}

// ReleaseReadAhead drops the account named key once its job has ended.
func ReleaseReadAhead(key string) {
	readAheads.mu.Lock()
	delete(readAheads.m, key)
	readAheads.mu.Unlock()
}

// Queued counts n records read for the dedup step.
func (a *ReadAhead) Queued(n int) {
	if a == nil || n <= 0 {
		return
	}
	ahead := a.queued.Add(int64(n)) - a.taken.Load()
	for p := a.peak.Load(); ahead > p && !a.peak.CompareAndSwap(p, ahead); p = a.peak.Load() {
	}
}

// Taken counts n records the dedup step took in (or a too-late gate
// routed to too_late).
func (a *ReadAhead) Taken(n int) {
	if a != nil && n > 0 {
		a.taken.Add(int64(n))
		a.lastTaken.Store(a.now().UnixMilli())
	}
}

// Ahead is how many records wait between the sources and the dedup step.
func (a *ReadAhead) Ahead() int64 {
	if a == nil {
		return 0
	}
	return max(0, a.queued.Load()-a.taken.Load())
}

// Peak is the most records that waited at once.
func (a *ReadAhead) Peak() int64 {
	if a == nil {
		return 0
	}
	return a.peak.Load()
}

// PastBudget is how many calls read past the budget for the watermark to
// move (see ReadAhead).
func (a *ReadAhead) PastBudget() int64 {
	if a == nil {
		return 0
	}
	return a.past.Load()
}

// Room reports whether a source call of up to call records may read now
// under budget: while what waits leaves room for it, or, for a partition
// holding its source's watermark (holdsWatermark), while the dedup step has
// taken nothing for Blocked (see ReadAhead). ok is false when the caller
// should pause and ask again.
func (a *ReadAhead) Room(budget, call int, holdsWatermark bool) (ok bool) {
	if a == nil || budget <= 0 {
		return true
	}
	if a.Ahead()+int64(min(call, budget)) <= int64(budget) {
		return true
	}
	if !holdsWatermark || a.now().Sub(time.UnixMilli(a.lastTaken.Load())) < Blocked {
		return false
	}
	a.past.Add(1)
	return true
}
