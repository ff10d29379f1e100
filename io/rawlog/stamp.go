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
	return &Stamper{wm: watermark.NewPartition(p, now), cfg: cfg}
}

// Stamp sets rec.WatermarkBefore, validates the record and advances the
// partition watermark with it if it is valid. rec.ReadAt must be set: it is
// the processing time the future check uses.
func (s *Stamper) Stamp(rec *model.Record) (model.Event, *model.Quarantined) {
	rec.WatermarkBefore = s.wm.Watermark()
	ev, q := event.Parse(*rec, s.cfg)
	s.wm.Observe(ev.EventTime, q == nil, rec.ReadAt)
	return ev, q
}

// Watermark is the partition watermark after the records stamped so far.
func (s *Stamper) Watermark() int64 { return s.wm.Watermark() }

// Partition exposes the underlying watermark state (idleness, reported
// watermark) for sources that hand it to a runner.
func (s *Stamper) Partition() *watermark.Partition { return s.wm }
