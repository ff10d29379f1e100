// Package flow is the embedded runner's flow control: a job's account of
// the records its sources read ahead of the dedup step (ReadAhead). It links
// no Beam or runner.
package flow

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// Prism has no backpressure: what a source reads waits in its queue before the first stateful
// step, so a long replay's memory grew with the log. Sources add what they read (Queued), dedup
// and the too-late gates subtract what they take (Taken), and a source reads only while a call
// fits (Room) under two bounds: a record budget (binding in a dense log) and a horizon in event
// time (in a sparse one). Prism hands a stateful step a key's elements behind its pending
// event-time timers, so a source whose watermark is lead past the frontier (the largest
// WatermarkBefore taken) has read all the next windows need. Once dedup has taken nothing for
// Blocked, the partitions holding the watermark read past both.

// DefaultReadAhead is the default --read-ahead: about 10 MB of queued
// events, 20 reader calls of 5,000 records.
const DefaultReadAhead = 100_000

// Lead is the horizon's lead for windows of window and an out-of-order bound:
// two windows and the bound let the watermark pass the next window end from
// any frontier, but each watermark round through prism stalls the sources
// briefly, so it spans eight windows (docs/performance.md).
func Lead(window, bound time.Duration) time.Duration { return 8*window + bound }

// Blocked is how long dedup must have taken nothing before the partitions
// holding the watermark read past the budget.
const Blocked = 100 * time.Millisecond

// ReadAhead is one job's read-ahead account in this process (ReadAheadOf);
// a nil *ReadAhead bounds nothing.
type ReadAhead struct {
	queued, taken atomic.Int64
	frontier      atomic.Int64 // the largest WatermarkBefore taken, or model.NoWatermark
	start         atomic.Int64 // the lowest watermark a call ended at before anything was taken
	peak          atomic.Int64 // the largest Ahead when records were queued
	lastTaken     atomic.Int64 // unix ms of the last Taken, or creation
	past          atomic.Int64 // calls granted past the budget
	now           func() time.Time
}

var readAheads sync.Map // key -> *ReadAhead

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
	if a, ok := readAheads.Load(key); ok {
		return a.(*ReadAhead)
	}
	a, _ := readAheads.LoadOrStore(key, newReadAhead(time.Now))
	return a.(*ReadAhead)
}

func newReadAhead(now func() time.Time) *ReadAhead {
	a := &ReadAhead{now: now}
	a.lastTaken.Store(now().UnixMilli())
	a.frontier.Store(model.NoWatermark)
	a.start.Store(model.NoWatermark)
	return a
}

// ReleaseReadAhead drops the account named key once its job has ended.
func ReleaseReadAhead(key string) { readAheads.Delete(key) }

// Queued counts n records read by a call that ended with its partition's
// watermark at watermark. Until anything is taken the lowest such watermark
// stands in for the frontier, else a replay's first calls would read the
// whole budget before the gate's first timer.
func (a *ReadAhead) Queued(n int, watermark int64) {
	if a == nil || n <= 0 {
		return
	}
	if watermark != model.NoWatermark && a.frontier.Load() == model.NoWatermark {
		for s := a.start.Load(); (s == model.NoWatermark || watermark < s) && !a.start.CompareAndSwap(s, watermark); s = a.start.Load() {
		}
	}
	ahead := a.queued.Add(int64(n)) - a.taken.Load()
	raise(&a.peak, ahead)
}

// Taken counts n records dedup took in (or a too-late gate routed away);
// watermarkBefore is the largest of their WatermarkBefore (how far their
// partitions had read when they were read).
func (a *ReadAhead) Taken(n int, watermarkBefore int64) {
	if a == nil || n <= 0 {
		return
	}
	a.taken.Add(int64(n))
	a.lastTaken.Store(a.now().UnixMilli())
	raise(&a.frontier, watermarkBefore)
}

// Horizon is the partition watermark at which a source stops reading: lead
// past the frontier (or, before anything was taken, past the start);
// math.MaxInt64 (none) before any call ended with a watermark, or for a
// lead of 0.
func (a *ReadAhead) Horizon(lead time.Duration) int64 {
	if a == nil || lead <= 0 {
		return math.MaxInt64
	}
	f := a.frontier.Load()
	if f == model.NoWatermark {
		f = a.start.Load()
	}
	if f == model.NoWatermark {
		return math.MaxInt64
	}
	return f + lead.Milliseconds()
}

// CallEnd is the partition watermark at which a call granted Room ends: the Horizon, or for a call
// past it (Room, when blocked) an eighth of lead on (about a window: Lead), enough to pass the
// next window end. A whole call would run a sparse log's partition, and the frontier behind it,
// days ahead (500 records are 16 h of a 20-day log's event time).
func (a *ReadAhead) CallEnd(lead time.Duration, watermark int64) int64 {
	h := a.Horizon(lead)
	if watermark < h {
		return h
	}
	return watermark + lead.Milliseconds()/8
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

// PastBudget is how many calls read past the budget or the horizon.
func (a *ReadAhead) PastBudget() int64 {
	if a == nil {
		return 0
	}
	return a.past.Load()
}

// Room reports whether a call of up to call records may read now for a
// partition at watermark: while it fits the budget below the Horizon, or, for
// a partition holding its source's watermark, once dedup took nothing for Blocked.
func (a *ReadAhead) Room(budget, call int, lead time.Duration, watermark int64, holdsWatermark bool) (ok bool) {
	if a == nil || budget <= 0 {
		return true
	}
	if a.Ahead()+int64(min(call, budget)) <= int64(budget) && watermark < a.Horizon(lead) {
		return true
	}
	if !holdsWatermark || a.now().Sub(time.UnixMilli(a.lastTaken.Load())) < Blocked {
		return false
	}
	a.past.Add(1)
	return true
}

// raise sets x to v if v is larger.
func raise(x *atomic.Int64, v int64) {
	for old := x.Load(); v > old && !x.CompareAndSwap(old, v); old = x.Load() {
	}
}
