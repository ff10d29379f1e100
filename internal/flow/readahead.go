// Package flow is the embedded runner's flow control: a job's account of
// the records its sources read ahead of the dedup step (ReadAhead). It links
// no Beam or runner.
package flow

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

// Prism has no backpressure: what a source reads waits in its queue before the first stateful
// step, so a long replay's memory grew with the log. Sources add what they read (Queued), dedup
// and the too-late gates subtract what they take (Taken), and a source reads only while a call
// fits (Room). As prism hands a stateful step a key's elements in timestamp order, part of the
// queue waits for the watermark: once dedup has taken nothing for Blocked, the partitions
// holding the watermark read past the budget.

// DefaultReadAhead is the default --read-ahead: about 10 MB of queued
// events, 20 reader calls of 5,000 records.
const DefaultReadAhead = 100_000

// Blocked is how long dedup must have taken nothing before the partitions
// holding the watermark read past the budget.
const Blocked = 100 * time.Millisecond

// ReadAhead is one job's read-ahead account in this process. The zero
// value is ready; a nil *ReadAhead bounds nothing.
type ReadAhead struct {
	queued, taken atomic.Int64
	peak          atomic.Int64 // the largest Ahead when records were queued
	lastTaken     atomic.Int64 // unix ms of the last Taken, or creation
	past          atomic.Int64 // calls granted past the budget
	now           func() time.Time
}

var readAheads = struct {
	mu sync.Mutex
	m  map[string]*ReadAhead
}{m: map[string]*ReadAhead{}}

// Token returns n random bytes in hex: a name (read-ahead account, source,
// reader attempt) no other job, pipeline or attempt draws.
func Token(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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

// Taken counts n records dedup took in (or a too-late gate routed away).
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

// PastBudget is how many calls read past the budget.
func (a *ReadAhead) PastBudget() int64 {
	if a == nil {
		return 0
	}
	return a.past.Load()
}

// Room reports whether a source call of up to call records may read now:
// while it fits under budget, or, for a partition holding its source's
// watermark, once dedup has taken nothing for Blocked.
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
