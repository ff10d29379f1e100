package sdfread

import (
	"log/slog"
	"time"

	"github.com/revenue-stream/hourly/watermark"
)

// Report takes p's watermark report at processing time now (others: the
// lowest watermark of the other active partitions, if any) and logs what it
// says changed about the reader's idleness; subject names the reader
// ("source partition", "pubsub source"). It returns the state for the
// restriction.
func Report(log *slog.Logger, subject string, p *watermark.Partition, now, others int64, anyOthers bool, idleTimeout time.Duration) (watermark.State, watermark.Report) {
	rep := p.Report(now, others, anyOthers)
	s := p.State()
	switch {
	case rep.WentIdle:
		log.Info(subject+" idle: it leaves the watermark minimum",
			"idle_timeout", idleTimeout, "last_record", watermark.FormatMs(s.LastActive),
			"reported_watermark", watermark.FormatMs(s.Reported))
	case rep.CameBack:
		log.Info(subject+" active again: its old records are late or too late",
			"event_watermark", watermark.FormatMs(p.Watermark()), "reported_watermark", watermark.FormatMs(s.Reported))
	}
	return s, rep
}
