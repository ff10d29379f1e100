package sources

import (
	"time"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// PolicyState is the watermark-policy state a reader carries in its
// restriction, so that a checkpoint resumes the partition's watermark
// exactly: the largest valid event time (ms, or model.NoWatermark), the
// processing time of the last record (ms), whether the partition was idle at
// the last call, and the watermark last reported (never decreasing). The
// folder and Pub/Sub readers share it.
type PolicyState struct {
	MaxValid   int64
	LastActive int64
	Idle       bool
	Reported   int64
}

// NewPolicyState is the state of a partition that has read nothing, whose
// idleness clock starts at now (ms).
func NewPolicyState(now int64) PolicyState {
	return PolicyState{MaxValid: model.NoWatermark, LastActive: now, Reported: model.NoWatermark}
}

// Stamper re-derives the partition's watermark policy from the state: the
// last activity seeds its idleness clock, the largest valid event time its
// watermark.
func (s PolicyState) Stamper(policy watermark.Policy, cfg event.Config) *rawlog.Stamper {
	st := rawlog.NewStamper(policy, cfg, s.LastActive)
	if s.MaxValid != model.NoWatermark {
		st.Partition().Observe(s.MaxValid, true, s.LastActive)
	}
	return st
}

// Stamp stamps one record read at rec.ReadAt (its WatermarkBefore, its
// validity) and folds it into the state.
func (s *PolicyState) Stamp(st *rawlog.Stamper, rec *model.Record, bound time.Duration) {
	st.Stamp(rec)
	s.LastActive = max(s.LastActive, rec.ReadAt)
	if w := st.Watermark(); w != model.NoWatermark {
		s.MaxValid = w + bound.Milliseconds()
	}
}

// Update folds the partition's idleness and reported watermark at
// processing time now (ms) into the state, and says whether the partition
// just went idle or just came back. It is UpdateAmong for a partition that
// has no others.
func (s *PolicyState) Update(p *watermark.Partition, now int64) (wentIdle, cameBack bool) {
	wentIdle, cameBack, _ = s.UpdateAmong(p, now, model.NoWatermark, false)
	return wentIdle, cameBack
}

// UpdateAmong is Update for a partition among others, active being the
// lowest watermark the other active partitions report (see
// watermark.Partition.ReportedAmong). byIdleness says the reported
// watermark advanced because every partition is idle.
func (s *PolicyState) UpdateAmong(p *watermark.Partition, now, active int64, anyActive bool) (wentIdle, cameBack, byIdleness bool) {
	idle := p.Idle(now)
	r, byIdleness := p.ReportedAmong(now, active, anyActive)
	byIdleness = byIdleness && r > s.Reported
	s.Reported = max(s.Reported, r)
	wentIdle, cameBack = idle && !s.Idle, !idle && s.Idle
	s.Idle = idle
	return wentIdle, cameBack, byIdleness
}

// Encode appends the state to a restriction's encoding.
func (s PolicyState) Encode(w *coders.Writer) {
	w.Varint(s.MaxValid)
	w.Varint(s.LastActive)
	w.Bool(s.Idle)
	w.Varint(s.Reported)
}

// DecodePolicyState reads what Encode wrote.
func DecodePolicyState(r *coders.Reader) PolicyState {
	return PolicyState{MaxValid: r.Varint(), LastActive: r.Varint(), Idle: r.Bool(), Reported: r.Varint()}
}
