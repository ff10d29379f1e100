package rawlog

import (
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// Stamper gives one partition's records, in arrival order, their
// WatermarkBefore (the partition watermark just before the record, which
// rule (a) of SPEC §4 and --max-age judge), validating them since only a
// valid event time advances it. Every reader stamps through this one type.
type Stamper struct {
	wm  *watermark.Partition
	cfg event.Config
}

// NewStamper starts a partition that has seen nothing; now (epoch ms) seeds
// its idleness clock. cfg must be valid.
func NewStamper(p watermark.Policy, cfg event.Config, now int64) *Stamper {
	return ResumeStamper(p, cfg, watermark.NewState(now))
}

// ResumeStamper continues a partition from the watermark state a reader
// carried in its restriction.
func ResumeStamper(p watermark.Policy, cfg event.Config, s watermark.State) *Stamper {
	return &Stamper{wm: watermark.Resume(p, s), cfg: cfg}
}

// Stamp sets rec.WatermarkBefore, validates the record and advances the
// watermark with it if valid. rec.ReadAt must be set (the future check).
func (s *Stamper) Stamp(rec *model.Record) (model.Event, *model.Quarantined) {
	rec.WatermarkBefore = s.wm.Before()
	ev, q := event.Parse(*rec, s.cfg)
	s.wm.Observe(ev.EventTime, q == nil, rec.ReadAt)
	return ev, q
}

// StampRecord is Stamp for a source: the verdict goes into rec.Valid or
// rec.Rejected, so validation downstream does not parse the line again.
func (s *Stamper) StampRecord(rec *model.Record) {
	ev, q := s.Stamp(rec)
	rec.Valid, rec.Rejected = nil, q
	if q == nil {
		rec.Valid = &ev
	}
}

// Watermark is the partition watermark after the records stamped so far.
func (s *Stamper) Watermark() int64 { return s.wm.Watermark() }

// Partition exposes the watermark state for sources that report it.
func (s *Stamper) Partition() *watermark.Partition { return s.wm }
