// Package watermark is the event-time progress policy of SPEC §2 in plain Go:
// per-partition bounded out-of-orderness, idleness, and the minimum over
// active partitions. Sources, tests and the offline oracle run the same code.
package watermark

import (
	"fmt"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// Policy holds the watermark settings of SPEC §2.
type Policy struct {
	// OutOfOrderBound: partition_watermark = max_valid - bound.
	OutOfOrderBound time.Duration
	// IdleTimeout is when a silent partition leaves the pipeline minimum.
	IdleTimeout time.Duration
	// IdleAdvance is the --idle-advance setting.
	IdleAdvance IdleAdvance
}

// IdleAdvance is the all-idle setting of SPEC §2.
type IdleAdvance uint8

const (
	// AdvanceProcessingTime: an idle partition follows processing time minus
	// the bound (as KafkaIO does), so silent live traffic still closes windows.
	AdvanceProcessingTime IdleAdvance = iota
	// AdvanceHold: an idle partition follows the active ones and holds when
	// all are idle, so a paused backfill does not turn its rest too late.
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

// ParseIdleAdvance reads an --idle-advance value (the flag binder names the flag in its error).
func ParseIdleAdvance(s string) (IdleAdvance, error) {
	if i := slices.Index(IdleAdvanceNames, s); i >= 0 {
		return IdleAdvance(i), nil
	}
	return 0, fmt.Errorf("want processing-time or hold, got %q", s)
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

// Partition tracks one source partition (made by NewPartition or Resume).
type Partition struct {
	p Policy
	s State
}

// NewPartition starts a partition that has seen nothing, idle-timed from now (ms).
func NewPartition(p Policy, now int64) *Partition { return Resume(p, NewState(now)) }

// Resume continues a partition from the state in a reader's restriction.
func Resume(p Policy, s State) *Partition { return &Partition{p: p, s: s} }

// State is the partition's state, for the reader's restriction.
func (p *Partition) State() State { return p.s }

// Watermark is max valid event time minus the bound, or NoWatermark before the
// first valid event; never processing time, so replays judge alike.
func (p *Partition) Watermark() int64 {
	if p.s.MaxValid == model.NoWatermark {
		return model.NoWatermark
	}
	return p.s.MaxValid - p.p.OutOfOrderBound.Milliseconds()
}

// Before is the next record's WatermarkBefore: Watermark, capped by a backlog hold.
func (p *Partition) Before() int64 {
	if p.s.Holding {
		return min(p.Watermark(), p.s.Hold)
	}
	return p.Watermark()
}

// Backlog starts (true) or ends (false) the backlog hold, which keeps the
// watermark where it was when a backlog began (sources/pubsub/pull.go).
func (p *Partition) Backlog(on bool) {
	switch {
	case !on:
		p.s.Holding = false
	case !p.s.Holding:
		p.s.Holding, p.s.Hold = true, p.Watermark()
	}
}

// Observe records one record read at processing time now (only valid event
// times move the watermark) and returns the watermark just before it (rule (a)).
func (p *Partition) Observe(eventTime int64, valid bool, now int64) (before int64) {
	before = p.Before()
	p.Touch(now)
	if valid { // model.NoWatermark is below every event time
		p.s.MaxValid = max(p.s.MaxValid, eventTime)
	}
	return before
}

// Touch counts now as activity without a record, so an unreachable input does
// not turn idle and close windows its backlog will fill.
func (p *Partition) Touch(now int64) { p.s.LastActive = max(p.s.LastActive, now) }

// Idle reports whether the partition produced nothing for the idle timeout.
func (p *Partition) Idle(now int64) bool { return now-p.s.LastActive >= p.p.IdleTimeout.Milliseconds() }

// Reported is Report for a partition that has no others (a single subscription).
func (p *Partition) Reported(now int64) int64 {
	return p.Report(now, model.NoWatermark, false).Watermark
}

// Report is what a source learns when it reports the partition's watermark.
type Report struct {
	// Watermark is the value to report; it never decreases.
	Watermark int64
	// WentIdle and CameBack say idleness changed since the last report.
	WentIdle, CameBack bool
	// ByIdleness says it advanced with every partition idle (no new data).
	ByIdleness bool
}

// Report is the watermark to hand the runner at processing time now; active
// is the lowest of the other active partitions (if anyActive). Once idle, the
// partition advances per its IdleAdvance; the backlog hold caps it.
func (p *Partition) Report(now, active int64, anyActive bool) Report {
	w := p.Watermark()
	idle := p.Idle(now)
	if idle {
		switch {
		case p.p.IdleAdvance == AdvanceProcessingTime:
			w = max(w, now-p.p.OutOfOrderBound.Milliseconds())
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
