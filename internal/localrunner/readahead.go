package localrunner

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Bounded read-ahead (issue #26). Prism has no backpressure: a source
// reads as fast as it can, and whatever it read waits, encoded, in prism's
// per-key queue in front of the dedup step, which on two cores falls
// behind. A replay's peak memory then grew with the length of the log
// (1,056 queued batches, 96 MB, 4.5 days of event time between the source
// and dedup at the peak of a 12-day replay). A ReadAhead is one job's
// account of that queue in this process: the dedup step's input stage adds
// what it hands over (Queued), the dedup step subtracts what it takes in
// (Taken), and a source reads only while the difference leaves room for
// another call (Room).
//
// It is flow control only. Reading later changes no verdict: a record's
// verdict depends on its partition's records and the pipeline watermark,
// never on when it was read. Losing the account (the dedup step runs in
// another process, as on Flink or Dataflow, whose runners have their own
// flow control) must not stall the job either: when the dedup step has
// taken nothing for StallAfter while the sources wait, the account lets
// them read on, as before this mechanism existed, and says so once.

// DefaultReadAhead is the default --read-ahead: records read but not yet
// taken in by the dedup step. About 10 MB of encoded events in prism's
// queue (about 100 bytes each without their payload), and 20 reader calls
// of 5,000 records: enough for the dedup step never to wait for input.
const DefaultReadAhead = 100_000

// StallAfter is how long a source waits for the dedup step to take
// anything before it reads on regardless (see ReadAhead).
const StallAfter = 30 * time.Second

// ReadAhead is one job's read-ahead account in this process. The zero
// value is ready; a nil *ReadAhead bounds nothing.
type ReadAhead struct {
	queued, taken atomic.Int64
	// peak is the largest Ahead seen when records were queued.
	peak atomic.Int64
	// lastTaken is when Taken was last called (unix ms), or the account's
	// creation.
	lastTaken atomic.Int64
	stalled   sync.Once
	now       func() time.Time
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

// Queued counts n records handed to the dedup step's input.
func (a *ReadAhead) Queued(n int) {
	if a == nil || n <= 0 {
		return
	}
	ahead := a.queued.Add(int64(n)) - a.taken.Load()
	for p := a.peak.Load(); ahead > p && !a.peak.CompareAndSwap(p, ahead); p = a.peak.Load() {
	}
}

// Taken counts n records the dedup step took in.
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

// Room reports whether a source call of up to call records may read now
// under budget: while what waits leaves room for it. ok is false when the
// caller should pause and ask again.
func (a *ReadAhead) Room(budget, call int) (ok bool) {
	if a == nil || budget <= 0 {
		return true
	}
	if a.Ahead()+int64(min(call, budget)) <= int64(budget) {
		return true
	}
	idle := a.now().Sub(time.UnixMilli(a.lastTaken.Load()))
	if idle < StallAfter {
		return false
	}
	a.stalled.Do(func() {
		slog.Warn("read-ahead: the dedup step took nothing in while the sources waited; reading on without the bound (it runs in another process?)",
			"waited", idle.Round(time.Second), "ahead", a.Ahead(), "budget", budget)
	})
	return true
}
