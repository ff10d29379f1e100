package reconcile

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// report.Reconcile.MetricsSource values.
const (
	// MetricsFromCounters: the runner's counters of the comparison step.
	MetricsFromCounters = "beam_counters"
	// MetricsFromComparison: Comparison.Metrics(), the runner having reported none.
	MetricsFromComparison = "comparison"
)

// NewReport builds the reconcile part of a report.Run from an outcome, diffs largest revenue
// difference first, then count.
func NewReport(o Outcome) report.Reconcile {
	r := report.Reconcile{
		RunID:            o.RunID,
		Started:          o.Started.Format(time.RFC3339),
		Finished:         o.Finished.Format(time.RFC3339),
		ExitCode:         o.ExitCode(),
		Source:           o.Options.Source,
		Partitions:       o.Partitions,
		Sink:             o.Options.Sink.String(),
		Range:            o.Options.Range.String(),
		Apply:            o.Options.Apply,
		Tolerance:        model.FormatMicros(o.Options.ToleranceMicros),
		Config:           o.Options.RunConfig(),
		Stats:            o.Stats,
		RawLog:           statsRows(o.Stats),
		WindowsChecked:   o.Checked,
		WindowsDiffering: len(o.Diffs),
		Material:         len(o.Material()),
		Applied:          o.Applied,
		Held:             len(o.Held()),
		Unexplained:      len(o.Unexplained()),
		ByClass:          map[string]int{ClassTooLate: 0, ClassMissingWindow: 0, ClassUnexplained: 0},
		OpenChecked:      o.OpenChecked,
		OpenDiffering:    len(o.Open),
		Metrics:          o.Counters,
		MetricsSource:    MetricsFromCounters,
		MetricsNote:      "Beam counters of the pipeline's comparison step, as the runner reported them",
		Namespace:        Namespace,
		MetricNames:      MetricNames,
		Diffs:            slicesx.Map(bySize(o.Diffs), reportDiff),
		Open:             slicesx.Map(bySize(o.Open), reportDiff),
		Unreadable:       slicesx.Map(o.Unreadable, Unreadable.String),
	}
	// The raw log's figures in the terms of the job's conservation line.
	st := o.Stats
	r.StreamTerms = fmt.Sprintf("%s, as the stream counts them (its too-late gate comes before dedup: too_late = %d ids + %d duplicate + %d conflicting copies judged too late)",
		st.StreamCounts().Identity(), st.TooLateIDs, st.DuplicatesTooLate, st.ConflictingTooLate)
	if !o.CountersFromRunner {
		r.MetricsSource, r.MetricsNote = MetricsFromComparison, "computed from the comparison: the runner reported no counters"
		r.Metrics = o.Comparison.Metrics() // what Run put in Counters, also for an Outcome Run did not make
	}
	for _, d := range o.Diffs {
		r.ByClass[d.Classification]++
		r.TotalDeltaMicros += d.DeltaMicros()
		r.TotalDeltaCount += d.DeltaCount()
	}
	r.TotalDelta = report.Signed(r.TotalDeltaMicros)
	return r
}

func bySize(diffs []Diff) []Diff {
	out := slices.Clone(diffs)
	slices.SortStableFunc(out, func(a, b Diff) int {
		return cmp.Or(cmp.Compare(abs(b.DeltaMicros()), abs(a.DeltaMicros())),
			cmp.Compare(abs(b.DeltaCount()), abs(a.DeltaCount())), compareKeys(a.Key, b.Key))
	})
	return out
}

func reportDiff(d Diff) report.Diff {
	rd := report.Diff{
		WindowStart:    model.FormatTime(d.WindowStart),
		Dims:           d.Dims,
		Streamed:       model.FormatMicros(d.Streamed.RevenueMicros),
		Recomputed:     model.FormatMicros(d.Recomputed.RevenueMicros),
		Delta:          report.Signed(d.DeltaMicros()),
		StreamedMicros: d.Streamed.RevenueMicros,
		RecompMicros:   d.Recomputed.RevenueMicros,
		DeltaMicros:    d.DeltaMicros(),
		StreamedCount:  d.Streamed.EventCount,
		RecompCount:    d.Recomputed.Count,
		DeltaCount:     d.DeltaCount(),
		TooLate:        model.FormatMicros(d.Recomputed.TooLateRevenueMicros),
		TooLateCount:   d.Recomputed.TooLateCount,
		Classification: d.Classification,
		Material:       d.Material,
		Applied:        d.AppliedRevision,
		Held:           d.Material && !d.InLog,
	}
	if d.HasRow {
		rd.StreamedState, rd.StreamedRev = d.Streamed.State.String(), d.Streamed.Revision
	}
	return rd
}

// WriteSummary prints what was read, checked and differs, and the top Options.Top differences.
func WriteSummary(w io.Writer, o Outcome) error {
	r := NewReport(o)
	st := o.Stats
	mode := "dry run (no --apply)"
	if r.Apply {
		mode = fmt.Sprintf("--apply: %d corrections written", r.Applied)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s: %s\n", r.RunID, mode)
	fmt.Fprintf(&b, "source   %s: %d partitions, %d files, %d records (%d quarantined)\n",
		r.Source, st.Partitions, st.Files, st.Read, st.QuarantinedTotal())
	fmt.Fprintf(&b, "events   %d distinct ids, %d duplicate copies, %d ids with conflicting payloads (%d copies reported, not summed), %d ids the stream judged too late\n",
		st.IDs, st.Duplicates, st.ConflictingIDs, st.ConflictingCopies, st.TooLateIDs)
	fmt.Fprintf(&b, "stream   %s\n", r.StreamTerms)
	fmt.Fprintf(&b, "range    %s\n", r.Range)
	fmt.Fprintf(&b, "windows  %d checked, %d differing (%d material: %d too_late, %d missing_window, %d unexplained)\n",
		r.WindowsChecked, r.WindowsDiffering, r.Material, r.ByClass[ClassTooLate], r.ByClass[ClassMissingWindow], r.ByClass[ClassUnexplained])
	fmt.Fprintf(&b, "delta    %s revenue, %s events\n", r.TotalDelta, report.SignedCount(r.TotalDeltaCount))
	fmt.Fprintf(&b, "open     %d windows not yet FINAL checked, %d differing (reported only: the stream still corrects them)\n",
		r.OpenChecked, r.OpenDiffering)
	fmt.Fprintf(&b, "metrics  %s\n", metricsLine(r.Metrics))
	if r.Held > 0 {
		fmt.Fprintf(&b, "held     %d material differences are in windows without any event in the raw log: --apply does not empty them (is --source complete?)\n", r.Held)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(&b, "unreadable %s\n", u)
	}
	fmt.Fprintf(&b, "verdict  %s\n", r.Verdict())
	if len(r.Diffs) > 0 && o.Options.Top > 0 {
		b.WriteString("top differences:\n")
		diffTable(r.Diffs[:min(len(r.Diffs), o.Options.Top)]).WriteText(&b)
	}
	if o.Options.Report != "" {
		fmt.Fprintf(&b, "report   %s\n", o.Options.Report)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// metricsLine renders "reconcile.name=value ..." in MetricNames order.
func metricsLine(m map[string]int64) string {
	return strings.Join(slicesx.Map(MetricNames, func(n string) string {
		return fmt.Sprintf("%s.%s=%d", Namespace, n, m[n])
	}), " ")
}

func diffTable(diffs []report.Diff) report.Table {
	t := report.NewTable("", "window_start", "dims", "streamed", "recomputed", "delta", "count", "classification", "applied")
	for _, d := range diffs { // closed keys: every one classified
		t.Rows = append(t.Rows, []string{d.WindowStart, d.Dims, d.Streamed, d.Recomputed, d.Delta,
			fmt.Sprintf("%d→%d", d.StreamedCount, d.RecompCount), d.ClassCell(), d.AppliedCell()})
	}
	return t
}

// WriteReport writes the run's report to path through package report, as cmd/launch's --report.
func WriteReport(path string, o Outcome) error {
	rec := NewReport(o)
	run := report.Run{
		Title:     "Reconcile " + o.RunID,
		Started:   o.Started,
		Finished:  o.Finished,
		Settings:  o.Options.RunConfig(),
		Reconcile: &rec,
	}
	if err := report.Write(path, run); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

// statsRows lists the raw-log figures in reading order.
func statsRows(s Stats) []report.Figure {
	n := func(name string, v int64) report.Figure { return report.Figure{Name: name, Value: fmt.Sprint(v)} }
	rows := []report.Figure{
		n("partitions", s.Partitions),
		n("files", s.Files),
		n("records read", s.Read),
		n("blank lines skipped", s.Blank),
		n("quarantined", s.QuarantinedTotal()),
	}
	for _, reason := range slices.Sorted(maps.Keys(s.Quarantined)) {
		rows = append(rows, n("  "+reason, s.Quarantined[reason]))
	}
	rows = append(rows, []report.Figure{
		n("  of which future_event_time by the stream's verdict", s.StreamFuture),
		n("valid copies", s.Valid),
		n("distinct event ids (counted once)", s.IDs),
		n("duplicate copies", s.Duplicates),
		n("ids with conflicting payloads", s.ConflictingIDs),
		n("conflicting copies (reported, not summed)", s.ConflictingCopies),
		n("  chosen: the stream's first_fingerprint", s.ByStreamFingerprint),
		n("  chosen: the copy the stream counted", s.ByStreamCounted),
		n("  chosen: lowest source_position", s.ByLowestPosition),
		n("  first_fingerprint not in the raw log", s.StreamFingerprintMissing),
		n("ids the stream judged too late", s.TooLateIDs),
		{Name: "raw-log watermark (lowest partition)", Value: s.logWatermark()},
	}...)
	if len(s.Unterminated) > 0 {
		rows = append(rows, report.Figure{Name: "unterminated last lines (read)", Value: strings.Join(s.Unterminated, ", ")})
	}
	return rows
}
