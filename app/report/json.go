package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/model"
)

// The JSON form spells times as RFC 3339 UTC and money as the exact decimal
// string plus integer micros, like the sink's tables, so a consumer never
// has to guess a unit or lose a cent to a float.

type jsonReport struct {
	Title        string            `json:"title"`
	Started      *time.Time        `json:"started,omitempty"`
	Finished     *time.Time        `json:"finished,omitempty"`
	Settings     map[string]string `json:"settings"`
	Counts       jsonCounts        `json:"counts"`
	Conservation jsonConservation  `json:"conservation"`
	AuditTables  map[string]int    `json:"audit_tables"`
	Partitions   []jsonPartition   `json:"partitions"`
	Delays       jsonHistogram     `json:"delays"`
	Windows      jsonWindows       `json:"windows"`
	Reconcile    *jsonReconcile    `json:"reconcile,omitempty"`
}

type jsonCounts struct {
	Read          int64            `json:"read"`
	Counted       int64            `json:"counted"`
	Duplicates    int64            `json:"duplicates"`
	Conflicts     int64            `json:"conflicts"`
	Quarantined   int64            `json:"quarantined"`
	TooLate       int64            `json:"too_late"`
	QuarantinedBy map[string]int64 `json:"quarantined_by_reason"`
	RowsByState   map[string]int64 `json:"rows_by_state"`
	AfterFinal    int64            `json:"invariant_data_after_final"`
	// The job's delay metrics (bucket counters, with p50, p95 and p99).
	Lateness delay.Histogram `json:"event_lateness"`
	Arrival  delay.Histogram `json:"arrival_delay"`
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

// jsonPoint uses epoch milliseconds: a trace has hundreds of points per
// partition and is meant for plotting.
type jsonPoint struct {
	Record    int    `json:"record"`
	EventTime int64  `json:"event_time_ms"`
	Watermark *int64 `json:"watermark_ms"`
}

type jsonHistogram struct {
	Unit    string       `json:"unit"`
	Buckets []jsonBucket `json:"buckets"`
	Total   int64        `json:"total"`
	P50     int64        `json:"p50"`
	P95     int64        `json:"p95"`
	P99     int64        `json:"p99"`
}

type jsonBucket struct {
	Label string `json:"label"`
	// Upper is null for the last, open bucket.
	Upper *int64 `json:"upper"`
	Count int64  `json:"count"`
}

type jsonWindows struct {
	Total   int          `json:"total"`
	Omitted int          `json:"omitted"`
	Shown   []jsonWindow `json:"shown"`
}

type jsonWindow struct {
	WindowStart string         `json:"window_start"`
	WindowEnd   string         `json:"window_end"`
	Dims        string         `json:"dims"`
	Revisions   []jsonRevision `json:"revisions"`
	// RevisionsOmitted counts the revisions left out between the first and
	// the last ones shown (see MaxRevisions).
	RevisionsOmitted int `json:"revisions_omitted"`
}

type jsonRevision struct {
	Revision      int64  `json:"revision"`
	State         string `json:"result_state"`
	Revenue       string `json:"revenue"`
	RevenueMicros int64  `json:"revenue_micros"`
	EventCount    int64  `json:"event_count"`
	Writer        string `json:"writer,omitempty"`
}

type jsonReconcile struct {
	RunID     string     `json:"run_id"`
	Checked   int        `json:"checked"`
	Tolerance string     `json:"tolerance,omitempty"`
	Applied   bool       `json:"applied"`
	Diffs     []jsonDiff `json:"diffs"`
}

type jsonDiff struct {
	RunID                   string `json:"run_id"`
	WindowStart             string `json:"window_start"`
	Dims                    string `json:"dims"`
	StreamedRevenueMicros   int64  `json:"streamed_revenue_micros"`
	RecomputedRevenueMicros int64  `json:"recomputed_revenue_micros"`
	DeltaMicros             int64  `json:"delta_micros"`
	StreamedCount           int64  `json:"streamed_count"`
	RecomputedCount         int64  `json:"recomputed_count"`
	Classification          string `json:"classification"`
	AppliedRevision         *int64 `json:"applied_revision"`
}

func writeJSON(w io.Writer, r Run) error {
	c := r.Counts
	cons := newConservation(r)
	out := jsonReport{
		Title:    r.Title,
		Settings: nonNil(r.Settings),
		Counts: jsonCounts{
			Read: c.Read, Counted: c.Counted, Duplicates: c.Duplicates, Conflicts: c.Conflicts,
			Quarantined: c.Quarantined, TooLate: c.TooLate,
			QuarantinedBy: nonNil(c.QuarantinedBy), RowsByState: nonNil(c.Rows), AfterFinal: c.AfterFinal,
			Lateness: nonEmpty(c.Lateness), Arrival: nonEmpty(c.Arrival),
		},
		Conservation: jsonConservation{Holds: cons.Holds, Identity: c.String(), Problem: cons.Problem},
		AuditTables: map[string]int{
			"too_late_events": r.TooLate, "conflict_events": r.Conflicts, "quarantined_events": r.Quarantined,
		},
		Partitions: []jsonPartition{},
		Delays:     jsonHistogram{Unit: r.Delays.Unit, Buckets: []jsonBucket{}, Total: r.Delays.Total(), P50: r.Delays.P50, P95: r.Delays.P95, P99: r.Delays.P99},
	}
	if !r.Started.IsZero() {
		t := r.Started.UTC()
		out.Started = &t
	}
	if !r.Finished.IsZero() {
		t := r.Finished.UTC()
		out.Finished = &t
	}
	for _, p := range r.Partitions {
		jp := jsonPartition{Partition: p.Partition, Read: p.Read, Valid: p.Valid, Behind: p.Behind, Points: []jsonPoint{}}
		if p.Watermark != model.NoWatermark {
			s := model.FormatTime(p.Watermark)
			jp.Watermark = &s
		}
		for _, pt := range p.Points {
			jpt := jsonPoint{Record: pt.Record, EventTime: pt.EventTime}
			if pt.Watermark != model.NoWatermark {
				wm := pt.Watermark
				jpt.Watermark = &wm
			}
			jp.Points = append(jp.Points, jpt)
		}
		out.Partitions = append(out.Partitions, jp)
	}
	lower := int64(0)
	for _, b := range r.Delays.Buckets {
		jb := jsonBucket{Label: bucketLabel(lower, b.Upper), Count: b.Count}
		if b.Upper != Unbounded {
			u := b.Upper
			jb.Upper = &u
		}
		out.Delays.Buckets = append(out.Delays.Buckets, jb)
		lower = b.Upper
	}
	shown, omitted := selectWindows(r.Windows)
	out.Windows = jsonWindows{Total: len(r.Windows), Omitted: omitted, Shown: []jsonWindow{}}
	for _, w := range shown {
		jw := jsonWindow{WindowStart: model.FormatTime(w.WindowStart), WindowEnd: model.FormatTime(w.WindowEnd), Dims: w.Dims}
		head, tail, gap := trimRevisions(w.Revisions)
		jw.RevisionsOmitted = gap
		for _, rv := range slices.Concat(head, tail) {
			jw.Revisions = append(jw.Revisions, jsonRevision{
				Revision: rv.Revision, State: rv.State.String(),
				Revenue: model.FormatMicros(rv.RevenueMicros), RevenueMicros: rv.RevenueMicros,
				EventCount: rv.EventCount, Writer: rv.Writer,
			})
		}
		out.Windows.Shown = append(out.Windows.Shown, jw)
	}
	if rc := r.Reconcile; rc != nil {
		jr := &jsonReconcile{RunID: rc.RunID, Checked: rc.Checked, Tolerance: rc.Tolerance, Applied: rc.Applied, Diffs: []jsonDiff{}}
		for _, d := range rc.Diffs {
			jr.Diffs = append(jr.Diffs, jsonDiff{
				RunID: d.RunID, WindowStart: model.FormatTime(d.WindowStart), Dims: d.Dims,
				StreamedRevenueMicros: d.StreamedRevenueMicros, RecomputedRevenueMicros: d.RecomputedRevenueMicros,
				DeltaMicros: d.DeltaMicros, StreamedCount: d.StreamedCount, RecomputedCount: d.RecomputedCount,
				Classification: d.Classification, AppliedRevision: d.AppliedRevision,
			})
		}
		out.Reconcile = jr
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

// nonNil makes an absent map render as {} rather than null.
func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// nonEmpty gives a Counts built by hand (no buckets) the empty histogram's
// buckets, so the JSON always lists them.
func nonEmpty(h delay.Histogram) delay.Histogram {
	if len(h.Buckets) == 0 {
		return delay.NewHistogram(nil)
	}
	return h
}
