package rawlog

import (
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// Stamper gives one partition's records, in arrival order, their
// WatermarkBefore: the partition watermark just before the record, which rule
// (a) of the too-late gate (SPEC §4) and --max-age judge it against. Only a
// valid event time advances the watermark, so stamping needs validation; the
// stamper returns the verdict so callers need not parse twice.
//
// The file source, reconcile and the oracle all stamp through this one type:
// the verdicts of rule (a) are then the same whoever reads the partition.
type Stamper struct {
	wm  *watermark.Partition
	cfg event.Config
}

// NewStamper starts a partition that has seen nothing. cfg must have passed
// event.Config.Validate. now (epoch ms) only seeds the partition's idleness
// clock.
func NewStamper(p watermark.Policy, cfg event.Config, now int64) *Stamper {
	return ResumeStamper(p, cfg, watermark.NewState(now))
}

// ResumeStamper continues a partition from the watermark state a reader
// carried in its restriction.
func ResumeStamper(p watermark.Policy, cfg event.Config, s watermark.State) *Stamper {
	return &Stamper{wm: watermark.Resume(p, s), cfg: cfg}
}

// Stamp sets rec.WatermarkBefore, validates the record and advances the
// partition watermark with it if it is valid. rec.ReadAt must be set: it is
// the processing time the future check uses.
func (s *Stamper) Stamp(rec *model.Record) (model.Event, *model.Quarantined) {
	rec.WatermarkBefore = s.wm.Before()
	ev, q := event.Parse(*rec, s.cfg)
	s.wm.Observe(ev.EventTime, q == nil, rec.ReadAt)
	return ev, q
}

// StampRecord is Stamp for a source that emits the record: the verdict goes
// into it (rec.Valid or rec.Rejected), so that validation downstream does
// not parse the line again.
func (s *Stamper) StampRecord(rec *model.Record) {
	ev, q := s.Stamp(rec)
	rec.Valid, rec.Rejected = nil, q
	if q == nil {
		rec.Valid = &ev
	}
}

// Watermark is the partition watermark after the records stamped so far.
func (s *Stamper) Watermark() int64 { return s.wm.Watermark() }

// Partition exposes the underlying watermark state (idleness, the backlog
// hold, the reported watermark) for sources that hand it to a runner.
func (s *Stamper) Partition() *watermark.Partition { return s.wm }
