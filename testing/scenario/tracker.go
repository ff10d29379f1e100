package scenario

import (
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// Tracker is the minimum over active partitions, as a runner computes it from
// the per-partition watermarks the sources report: the pipeline watermark a
// test drives a DoFn with.
type Tracker struct {
	policy watermark.Policy
	parts  map[string]*watermark.Partition
	last   int64
	idle   map[string]bool
	// IdleTransitions counts active→idle changes seen by Watermark.
	IdleTransitions int
}

// NewTracker returns an empty tracker.
func NewTracker(p watermark.Policy) *Tracker {
	return &Tracker{policy: p, parts: map[string]*watermark.Partition{}, last: model.NoWatermark, idle: map[string]bool{}}
}

// Partition returns the named partition, creating it at processing time now.
func (t *Tracker) Partition(name string, now int64) *watermark.Partition {
	p, ok := t.parts[name]
	if !ok {
		p = watermark.NewPartition(t.policy, now)
		t.parts[name] = p
	}
	return p
}

// Observe forwards to the partition and returns its watermark before the record.
func (t *Tracker) Observe(partition string, eventTime int64, valid bool, now int64) int64 {
	return t.Partition(partition, now).Observe(eventTime, valid, now)
}

// Idle reports whether the named partition is idle at now.
func (t *Tracker) Idle(name string, now int64) bool {
	p, ok := t.parts[name]
	return ok && p.Idle(now)
}

// Watermark is the minimum over active partitions at now, or the largest
// partition watermark when all are idle; it never decreases.
func (t *Tracker) Watermark(now int64) int64 {
	minActive, maxAll := int64(0), model.NoWatermark
	anyActive := false
	for name, p := range t.parts {
		w := p.Watermark()
		maxAll = max(maxAll, w)
		idle := p.Idle(now)
		if idle && !t.idle[name] {
			t.IdleTransitions++
		}
		t.idle[name] = idle
		if idle {
			continue
		}
		if !anyActive || w < minActive {
			minActive, anyActive = w, true
		}
	}
	w := maxAll
	if anyActive {
		w = minActive
	}
	t.last = max(t.last, w)
	return t.last
}
