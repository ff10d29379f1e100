package report

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/jsonl"
)

// Document is the JSON form of a report: times in RFC 3339 UTC, money as exact decimals plus
// micros, like the sink.
type Document struct {
	Title    string     `json:"title"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	// Job is Run.Job by name (source, sink, runner, state, ...).
	Job      map[string]string `json:"job,omitempty"`
	Settings map[string]string `json:"settings"`
	// Counts are the job's figures (null when the run has none).
	Counts *metrics.Counts `json:"counts"`
	// Conservation is the identity's verdict: left out for a run that is no job (reconcile,
	// advise), which has none, so that a script reading .conservation.holds never sees a
	// violation that did not happen.
	Conservation *jsonConservation `json:"conservation,omitempty"`
	AuditTables  map[string]int64  `json:"audit_tables,omitempty"`
	Partitions   []jsonPartition   `json:"partitions"`
	Delays       delay.Histogram   `json:"delays"`
	Windows      jsonWindows       `json:"windows"`
	Reconcile    *Reconcile        `json:"reconcile,omitempty"`
	Advice       *Advice           `json:"advice,omitempty"`
}

type jsonConservation struct {
	Holds    bool   `json:"holds"`
	Identity string `json:"identity"`
	Problem  string `json:"problem,omitempty"`
}

type jsonPartition struct {
	Partition string      `json:"partition"`
	Read      int         `json:"read"`
	Valid     int         `json:"valid"`
	Behind    int         `json:"behind_watermark"`
	Watermark *string     `json:"watermark"`
	Points    []jsonPoint `json:"points"`
}

// jsonPoint uses epoch milliseconds: it is meant for plotting.
type jsonPoint struct {
	Record    int    `json:"record"`
	EventTime int64  `json:"event_time_ms"`
	Watermark *int64 `json:"watermark_ms"`
}

type jsonWindows struct {
	Total   int          `json:"total"`
	Omitted int          `json:"omitted"`
	Shown   []jsonWindow `json:"shown"`
}

type jsonWindow struct {
	WindowStart string      `json:"window_start"`
	WindowEnd   string      `json:"window_end"`
	Dims        string      `json:"dims"`
	Revisions   []jsonl.Row `json:"revisions"` // in the sinks' own format
	// RevisionsOmitted counts the revisions left out (see MaxRevisions).
	RevisionsOmitted int `json:"revisions_omitted"`
}

func writeJSON(w io.Writer, r Run) error {
	out := Document{
		Title:     r.Title,
		Started:   utc(r.Started),
		Finished:  utc(r.Finished),
		Settings:  nonNil(r.Settings),
		Delays:    nonEmpty(r.Delays),
		Reconcile: r.Reconcile,
		Advice:    r.Advice,
	}
	if len(r.Job) > 0 {
		out.Job = map[string]string{}
		for _, f := range r.Job {
			out.Job[f.Name] = f.Value
		}
	}
	switch {
	case r.Counts != nil:
		c := *r.Counts
		c.QuarantinedBy, c.ReadBy, c.Rows = nonNil(c.QuarantinedBy), nonNil(c.ReadBy), nonNil(c.Rows)
		c.Lateness, c.Arrival = nonEmpty(c.Lateness), nonEmpty(c.Arrival)
		why := problem(c)
		out.Counts = &c
		out.Conservation = &jsonConservation{Holds: why == "", Identity: c.String(), Problem: why}
	case len(r.Job) > 0:
		out.Conservation = &jsonConservation{Problem: noMetrics}
	}
	if a := r.Audit; a != nil {
		out.AuditTables = map[string]int64{}
		for _, n := range auditTables(*a) {
			out.AuditTables[n.Name] = n.Value
		}
	}
	out.Partitions = slicesx.Map(r.Partitions, func(p PartitionTrace) jsonPartition {
		return jsonPartition{Partition: p.Partition, Read: p.Read, Valid: p.Valid, Behind: p.Behind, Watermark: orNil(p.Watermark, model.FormatTime(p.Watermark)),
			Points: slicesx.Map(p.Points, func(pt TracePoint) jsonPoint {
				return jsonPoint{Record: pt.Record, EventTime: pt.EventTime, Watermark: orNil(pt.Watermark, pt.Watermark)}
			})}
	})
	shown, omitted := selectWindows(r.Windows)
	out.Windows = jsonWindows{Total: len(r.Windows), Omitted: omitted, Shown: slicesx.Map(shown, func(w WindowHistory) jsonWindow {
		kept, cut := trim(w.Revisions, reportTrim)
		return jsonWindow{WindowStart: model.FormatTime(w.WindowStart), WindowEnd: model.FormatTime(w.WindowEnd), Dims: w.Dims,
			Revisions: slicesx.Map(kept, func(rv model.Row) jsonl.Row { return jsonl.Row(rv) }), RevisionsOmitted: cut}
	})}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

// utc is t in UTC, nil when unset (omitted).
func utc(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// orNil is &v, nil when watermark is model.NoWatermark (null).
func orNil[T any](watermark int64, v T) *T {
	if watermark == model.NoWatermark {
		return nil
	}
	return &v
}

// nonNil makes an absent map render as {} rather than null.
func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// nonEmpty gives a histogram without buckets the empty one's, so the JSON always lists them.
func nonEmpty(h delay.Histogram) delay.Histogram {
	if len(h.Buckets) == 0 {
		return delay.NewHistogram(nil)
	}
	return h
}
