package sdfread

import (
	"log/slog"
	"time"

	"github.com/revenue-stream/hourly/watermark"
)

// LogIdleness logs what a watermark report says changed about a reader's
// idleness; subject names the reader ("source partition", "pubsub
// source"), p is its partition after the report.
func LogIdleness(log *slog.Logger, subject string, rep watermark.Report, p *watermark.Partition, idleTimeout time.Duration) {
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
}
