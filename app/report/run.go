package report

import (
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
)

// Run is everything a report shows about one run, of either command:
// cmd/launch fills the job's parts (Job, Counts, the trace, Windows, Audit),
// cmd/reconcile fills Reconcile. Every part is drawn when present.
type Run struct {
	Title             string
	Started, Finished time.Time
	// Settings are the effective settings as flags spell them (window,
	// ooo-bound, allowed-lateness, ...), shown sorted by name.
	Settings map[string]string
	// Job is what the streaming job was and how it ended (source, sink,
	// runner, state, ...), in the order shown.
	Job []Figure
	// Counts are the job's conservation figures for this run; nil when
	// there was no streaming job or it reported no metrics (then the
	// conservation identity cannot be checked, and the report says so).
	Counts *pipeline.Counts
	// Partitions trace the partition watermark against event time
	// (see TraceFolder).
	Partitions []PartitionTrace
	// Delays is the arrival delay distribution (see TraceFolder).
	Delays delay.Histogram
	// Windows is each key's revision history (see WindowsFromChangelog).
	Windows []WindowHistory
	// Audit holds the row counts of the sink's audit tables after the run;
	// nil when the sink keeps none (the console).
	Audit *Audit
	// Reconcile, when set, is what a reconcile run found.
	Reconcile *Reconcile
	// Advice, when set, is what the advisor (cmd/advise) found.
	Advice *Advice
}

// Figure is one named value as a report shows it.
type Figure struct{ Name, Value string }

// Audit holds the row counts of the sink's audit tables. They may exceed a
// run's Counts: the tables keep earlier runs' records too.
type Audit struct {
	TooLate, Conflicts, Quarantined int
}

// PartitionTrace is one partition's watermark against the event times it
// read, in arrival order.
type PartitionTrace struct {
	Partition string
	// Points is a sample of the partition's valid events in arrival order,
	// at most MaxTracePoints of them (see TraceFolder for how it is chosen).
	Points []TracePoint
	// Read counts the partition's records (non-blank lines), valid or not;
	// Valid counts those that passed validation.
	Read, Valid int
	// Behind counts valid events whose event time lay below the partition
	// watermark just before them: late for their partition, which makes
	// them LATE revisions or, past the allowed lateness, too late.
	Behind int
	// Watermark is the partition watermark after its last record, or
	// model.NoWatermark when it had no valid event.
	Watermark int64
}

// TracePoint is one valid event of a partition.
type TracePoint struct {
	// Record is the event's 1-based index among the partition's records in
	// arrival order (invalid records count too, so gaps show them).
	Record int
	// EventTime is the event's event time (epoch ms).
	EventTime int64
	// Watermark is the partition watermark just before the event (epoch ms),
	// the one rule (a) of the too-late gate judges it against, or
	// model.NoWatermark for a partition's first valid event.
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
	for _, r := range w.Revisions {
		if r.State == model.Late {
			return true
		}
	}
	return false
}
