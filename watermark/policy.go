// Package watermark is the event-time progress policy of SPEC §2, in plain Go:
// per-partition bounded out-of-orderness, idleness, and the pipeline watermark
// as the minimum over active partitions. Sources run it; tests and the offline
// oracle run the very same code without a runner.
package watermark

import (
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// Policy holds the two watermark settings. Allowed lateness and dedup
// retention are separate settings on purpose (SPEC §2) and live elsewhere.
type Policy struct {
	// OutOfOrderBound is how far behind the largest valid event time a
	// partition's watermark trails: partition_watermark = max_valid - bound.
	OutOfOrderBound time.Duration
	// IdleTimeout is the processing time after which a partition that produced
	// nothing leaves the pipeline minimum.
	IdleTimeout time.Duration
	// IdleAdvance is what the watermark does when every partition is idle
	// (--idle-advance); the zero value is AdvanceProcessingTime.
	IdleAdvance IdleAdvance
}

// IdleAdvance is the all-idle setting of SPEC §2.
type IdleAdvance uint8

const (
	// AdvanceProcessingTime: an idle partition's watermark follows
	// processing time minus the bound, as Beam's KafkaIO does, so that with
	// every partition idle open windows get their ON_TIME and FINAL rows.
	// It suits live traffic, where silence means nothing more is coming.
	AdvanceProcessingTime IdleAdvance = iota
	// AdvanceHold: an idle partition leaves the minimum by following the
	// active partitions; with every partition idle the watermark holds. It
	// suits a backfill of old data, where a pause says nothing about event
	// time, and would otherwise turn the rest of the backfill too late.
	AdvanceHold
)

// IdleAdvanceNames are the --idle-advance values, in IdleAdvance order.
var IdleAdvanceNames = []string{"processing-time", "hold"}

func (a IdleAdvance) String() string {
	if int(a) < len(IdleAdvanceNames) {
		return IdleAdvanceNames[a]
	}
	return fmt.Sprintf("IdleAdvance(%d)", uint8(a))
}

// ParseIdleAdvance reads an --idle-advance value.
func ParseIdleAdvance(s string) (IdleAdvance, error) {
	for i, n := range IdleAdvanceNames {
		if s == n {
			return IdleAdvance(i), nil
		}
	}
	return 0, fmt.Errorf("--idle-advance: %q: want processing-time or hold", s)
}

// Validate refuses settings that cannot work.
func (p Policy) Validate() error {
	if p.OutOfOrderBound < 0 {
		return fmt.Errorf("--ooo-bound must not be negative, got %v", p.OutOfOrderBound)
	}
	if p.IdleTimeout <= 0 {
		return fmt.Errorf("--idle-timeout must be positive, got %v", p.IdleTimeout)
	}
	if int(p.IdleAdvance) >= len(IdleAdvanceNames) {
		return fmt.Errorf("--idle-advance: unknown setting %v", p.IdleAdvance)
	}
	return nil
}

// Partition tracks one source partition. The zero value is not usable; use
// NewPartition or Resume.
type Partition struct {
	bound, idle int64 // ms
	advance     IdleAdvance
	s           State
}

// NewPartition starts a partition that has seen nothing. now is the processing
// time (ms) it starts at: idleness is measured from there.
func NewPartition(p Policy, now int64) *Partition { return Resume(p, NewState(now)) }

// Resume continues a partition from the state a reader carried in its
// restriction (see State).
func Resume(p Policy, s State) *Partition {
	return &Partition{
		bound:   p.OutOfOrderBound.Milliseconds(),
		idle:    p.IdleTimeout.Milliseconds(),
		advance: p.IdleAdvance,
		s:       s,
	}
}

// State is the partition's state, for the reader to store in its
// restriction.
func (p *Partition) State() State { return p.s }

// Watermark is the partition's event-time watermark: max valid event time
// minus the bound, or NoWatermark before the first valid event. It depends on
// the partition's records alone, never on processing time, so the too-late
// verdict of rule (a) is the same however a replay is bundled.
func (p *Partition) Watermark() int64 {
	if p.s.MaxValid == model.NoWatermark {
		return model.NoWatermark
	}
	return p.s.MaxValid - p.bound
}

// Before is the watermark the next record is judged against (its
// WatermarkBefore): Watermark, or the backlog hold while it holds.
func (p *Partition) Before() int64 {
	if p.s.Holding {
		return min(p.Watermark(), p.s.Hold)
	}
	return p.Watermark()
}

// Backlog starts (true) or ends (false) the backlog hold before the next
// record: a source that knows it reads a backlog (Pub/Sub, see
// io/sources/pubsub/backlog.go) keeps the watermark where it was when the
// backlog began, for WatermarkBefore and for the runner alike. The first
// record without it ends the hold.
func (p *Partition) Backlog(on bool) {
	switch {
	case !on:
		p.s.Holding = false
	case !p.s.Holding:
		p.s.Holding, p.s.Hold = true, p.Watermark()
	}
}

// Observe records one record read at processing time now. valid says whether
// validation accepted it: only valid event times move the watermark, so a
// future or malformed timestamp never advances it (such records are
// quarantined before they get here). It returns the watermark just before the
// record, which rule (a) of the too-late gate judges it against.
func (p *Partition) Observe(eventTime int64, valid bool, now int64) (before int64) {
	before = p.Before()
	p.Touch(now)
	if valid && (p.s.MaxValid == model.NoWatermark || eventTime > p.s.MaxValid) {
		p.s.MaxValid = eventTime
	}
	return before
}

// Touch counts processing time now as activity without a record: a source
// that could not reach its input (Pub/Sub unavailable) learned nothing about
// its producers, so it must not turn idle and close the windows its backlog
// will fill.
func (p *Partition) Touch(now int64) { p.s.LastActive = max(p.s.LastActive, now) }

// Idle reports whether the partition produced nothing for the idle timeout.
func (p *Partition) Idle(now int64) bool { return now-p.s.LastActive >= p.idle }

// Reported is the watermark a source hands to the runner for a partition
// that has no others (a single subscription): Report with no active
// partition.
func (p *Partition) Reported(now int64) int64 {
	return p.Report(now, model.NoWatermark, false).Watermark
}

// Report is what a source learns when it hands the partition's watermark to
// the runner (see Partition.Report).
type Report struct {
	// Watermark is the value to report; it never decreases.
	Watermark int64
	// WentIdle and CameBack say the partition's idleness changed since the
	// last report, which sources log and count.
	WentIdle, CameBack bool
	// ByIdleness says the value advanced while every partition is idle,
	// which sources log: that is when open windows can become FINAL without
	// new data.
	ByIdleness bool
}

// Report is the watermark a source hands to the runner for this partition
// at processing time now, recorded in the state. active is the lowest
// watermark reported by the other partitions that are active (anyActive
// false: there is none).
//
// While active it is the event-time watermark. Once idle the partition must
// stop holding the pipeline minimum; its returning records are then judged
// late or too late downstream, never lost. With AdvanceProcessingTime it
// advances with processing time (now - bound), as Beam's KafkaIO does for an
// empty partition. With AdvanceHold it follows the active partitions, and
// holds when there are none. While the backlog hold holds, it goes no
// further than the hold. The value never decreases.
func (p *Partition) Report(now, active int64, anyActive bool) Report {
	w := p.Watermark()
	idle := p.Idle(now)
	if idle {
		switch {
		case p.advance == AdvanceProcessingTime:
			w = max(w, now-p.bound)
		case anyActive:
			w = max(w, active)
		}
	}
	if p.s.Holding {
		w = min(w, p.s.Hold)
	}
	r := Report{
		WentIdle:   idle && !p.s.Idle,
		CameBack:   !idle && p.s.Idle,
		ByIdleness: idle && !anyActive && w > p.s.Reported,
	}
	p.s.Idle = idle
	p.s.Reported = max(p.s.Reported, w)
	r.Watermark = p.s.Reported
	return r
}

// Tracker is the pipeline view over several partitions: the minimum over the
// active ones. Runners compute this themselves from per-partition estimators;
// Tracker is the same rule for tests, the oracle and single-reader sources.
type Tracker struct {
	policy Policy
	parts  map[string]*Partition
	last   int64
	// IdleTransitions counts active→idle changes seen by Watermark.
	IdleTransitions int
	idle            map[string]bool
}

// NewTracker returns an empty tracker.
func NewTracker(p Policy) *Tracker {
	return &Tracker{policy: p, parts: map[string]*Partition{}, last: model.NoWatermark, idle: map[string]bool{}}
}

// Partition returns the named partition, creating it at processing time now.
func (t *Tracker) Partition(name string, now int64) *Partition {
	p, ok := t.parts[name]
	if !ok {
		p = NewPartition(t.policy, now)
		t.parts[name] = p
	}
	return p
}

// Observe forwards to the partition and returns its watermark before the record.
func (t *Tracker) Observe(partition string, eventTime int64, valid bool, now int64) int64 {
	return t.Partition(partition, now).Observe(eventTime, valid, now)
}

// Idle lists whether each partition is idle at now.
func (t *Tracker) Idle(name string, now int64) bool {
	p, ok := t.parts[name]
	return ok && p.Idle(now)
}

// Watermark is the minimum over active partitions at processing time now. With
// every partition idle it is the largest partition watermark. It never
// decreases.
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
