package report

import (
	"slices"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Run is everything a report shows about one run, of either command; every part is drawn when
// present.
type Run struct {
	Title             string
	Started, Finished time.Time
	// Settings are the effective settings as flags spell them, shown sorted.
	Settings map[string]string
	// Job is what the streaming job was and how it ended, in the order shown.
	Job []Figure
	// Counts are the job's conservation figures; nil without a job or metrics (the report says so).
	Counts *metrics.Counts
	// Partitions trace each partition's watermark against event time (TraceFolder).
	Partitions []PartitionTrace
	// Delays is the arrival delay distribution (see TraceFolder).
	Delays delay.Histogram
	// Windows is each key's revision history (see WindowsFromChangelog).
	Windows []WindowHistory
	// Audit is the audit tables' row counts, earlier runs' records included; nil when the sink
	// keeps none.
	Audit *sink.AuditCounts
	// Reconcile, when set, is what a reconcile run found.
	Reconcile *Reconcile
	// Advice, when set, is what the advisor (cmd/advise) found.
	Advice *Advice
}

// Figure is one named value as a report shows it (and the live page's settings).
type Figure struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// PartitionTrace is one partition's watermark against its event times, in arrival order.
type PartitionTrace struct {
	Partition string
	// Points samples the valid events, at most MaxTracePoints (see TraceFolder).
	Points []TracePoint
	// Read counts records (valid or not), Valid the valid ones.
	Read, Valid int
	// Behind counts valid events below the partition watermark before them: LATE or too late.
	Behind int
	// Watermark is the partition watermark at the end, or model.NoWatermark.
	Watermark int64
}

// TracePoint is one valid event of a partition.
type TracePoint struct {
	// Record is the 1-based index among all the partition's records (gaps show invalid ones).
	Record int
	// EventTime is the event's event time (epoch ms).
	EventTime int64
	// Watermark is the partition watermark before the event (rule (a)), or model.NoWatermark.
	Watermark int64
}

// Behind reports whether the event arrived below its partition watermark.
func (p TracePoint) Behind() bool {
	return p.Watermark != model.NoWatermark && p.EventTime < p.Watermark
}

// WindowHistory is one (window, dims) key's accepted snapshots.
type WindowHistory struct {
	WindowStart, WindowEnd int64 // epoch ms
	Dims                   string
	// Revisions are in increasing revision order.
	Revisions []model.Row
}

// HasLate reports whether a LATE revision was written for the key.
func (w WindowHistory) HasLate() bool {
	return slices.ContainsFunc(w.Revisions, func(r model.Row) bool { return r.State == model.Late })
}
