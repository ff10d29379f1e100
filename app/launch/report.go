package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/model"
)

// reportFormats maps a --report extension to its renderer. Every renderer
// gets the same Report; adding a format is one entry here (and one file).
//
// HTML is rendered by package report instead (report_html.go): it needs the
// raw log's watermark trace as well as the summary.
var reportFormats = map[string]func(io.Writer, *Report) error{
	".json": renderJSON,
	".md":   renderMarkdown,
}

// Report is a run report: the summary, plus every window's current row and
// every revision the sink holds.
type Report struct {
	*Summary
	Windows   []ReportRow    `json:"windows"`
	Revisions []ReportRow    `json:"revisions"`
	Audit     map[string]int `json:"audit_rows"`
}

// ReportRow is a snapshot row as SPEC §5 spells its columns.
type ReportRow struct {
	WindowStart   string `json:"window_start"`
	WindowEnd     string `json:"window_end"`
	Dims          string `json:"dims"`
	Revenue       string `json:"revenue"`
	RevenueMicros int64  `json:"revenue_micros"`
	EventCount    int64  `json:"event_count"`
	Revision      int64  `json:"revision"`
	ResultState   string `json:"result_state"`
	Writer        string `json:"writer,omitempty"`
}

func reportRows(rows []model.Row) []ReportRow {
	out := make([]ReportRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, ReportRow{
			WindowStart: model.FormatTime(r.WindowStart), WindowEnd: model.FormatTime(r.WindowEnd), Dims: r.Dims,
			Revenue: model.FormatMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros, EventCount: r.EventCount,
			Revision: r.Revision, ResultState: r.State.String(), Writer: r.Writer,
		})
	}
	return out
}

func newReport(s *Summary) *Report {
	audit := s.view.Audit
	if audit == nil {
		audit = map[string]int{}
	}
	return &Report{Summary: s, Windows: reportRows(s.view.Current), Revisions: reportRows(s.view.Changelog), Audit: audit}
}

// writeReport renders the report in the format path's extension names, to
// a local path or any filesystem Beam serves: a reader never sees half a
// report (see files.WriteFile).
func writeReport(path string, s *Summary) error {
	render, ok := reportFormats[strings.ToLower(filepath.Ext(path))]
	if !ok {
		return fmt.Errorf("report %s: unknown format", path)
	}
	if err := files.WriteFile(context.Background(), path, func(w io.Writer) error { return render(w, newReport(s)) }); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}

func renderJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

func renderMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# Hourly revenue run report\n\n")
	fmt.Fprintf(&b, "- source: `%s`%s\n", s.Source, map[bool]string{true: " (demo)"}[s.Demo])
	if s.Archive != "" {
		fmt.Fprintf(&b, "- archive: `%s` (every message acknowledged is here; `cmd/reconcile --source=` it)\n", s.Archive)
	}
	fmt.Fprintf(&b, "- sink: `%s`\n- runner: %s, job %s: **%s** in %s\n", s.Sink, s.Runner, orDash(s.JobID), s.State, s.Duration.Round(1e8))
	if s.Interrupted {
		b.WriteString("- interrupted: readers stopped and the job was cancelled; no window was made FINAL early\n")
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "- error: %s\n", mdCell(s.Error))
	}
	b.WriteString("\n## Settings\n\n| setting | value |\n|---|---|\n")
	for _, k := range settingOrder {
		if v, ok := s.Settings[k]; ok {
			fmt.Fprintf(&b, "| --%s | %s |\n", k, mdCell(orDash(v)))
		}
	}

	c := s.Counts
	b.WriteString("\n## Conservation\n\n| figure | records |\n|---|---:|\n")
	for _, f := range []struct {
		name string
		v    int64
	}{{"read", c.Read}, {"counted", c.Counted}, {"duplicates", c.Duplicates}, {"conflicts", c.Conflicts},
		{"quarantined", c.Quarantined}, {"too_late", c.TooLate}} {
		fmt.Fprintf(&b, "| %s | %d |\n", f.name, f.v)
	}
	verdict := "holds"
	if !s.Conserved {
		verdict = "**VIOLATED**"
	}
	fmt.Fprintf(&b, "\n`%s`: %s\n", s.Identity, verdict)
	if len(c.QuarantinedBy) > 0 {
		fmt.Fprintf(&b, "\nQuarantined by reason: %s\n", strings.Trim(breakdown(c.QuarantinedBy, ""), "()"))
	}
	fmt.Fprintf(&b, "\nRows emitted: %s; the sink accepted %d revisions, %d stale; %d audit rows inserted.\n",
		stateCounts(c.Rows), c.SinkAccepted, c.SinkStale, c.SinkAudit)
	if c.Lateness.Total > 0 || c.Arrival.Total > 0 {
		fmt.Fprintf(&b, "\n## Delays\n\nThe valid events' delays, from the job's bucket counters: a percentile is below "+
			"the upper bound of the bucket that holds it. Event lateness is how far behind its partition's largest event "+
			"time so far an event arrived; arrival delay is read time - event time (for a replay, when the replay ran).\n\n")
		b.WriteString("| delay | events | p50 | p95 | p99 |")
		for _, bk := range c.Lateness.Buckets {
			fmt.Fprintf(&b, " %s |", bk.Label)
		}
		b.WriteString("\n|---|---:|---:|---:|---:|" + strings.Repeat("---:|", len(c.Lateness.Buckets)) + "\n")
		for _, m := range delayMetrics(c) {
			h := m.H
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |", m.Name, h.Total, pct(h, h.P50), pct(h, h.P95), pct(h, h.P99))
			for _, bk := range h.Buckets {
				fmt.Fprintf(&b, " %d |", bk.Count)
			}
			b.WriteString("\n")
		}
	}

	if s.view.Readable {
		fmt.Fprintf(&b, "\n## Windows (%d)\n\nThe current row of every window and dims in the sink.\n\n", len(r.Windows))
		mdRows(&b, r.Windows, false)
		fmt.Fprintf(&b, "\n## Revisions (%d)\n\nEvery accepted snapshot, oldest first per window.\n\n", len(r.Revisions))
		mdRows(&b, r.Revisions, true)
		fmt.Fprintf(&b, "\n## Audit tables\n\n| table | rows |\n|---|---:|\n")
		for _, t := range []string{"too_late_events", "conflict_events", "quarantined_events"} {
			fmt.Fprintf(&b, "| %s | %d |\n", t, r.Audit[t])
		}
	}
	if s.view.Query != "" {
		fmt.Fprintf(&b, "\nQuery: `%s`\n", s.view.Query)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdRows(b *strings.Builder, rows []ReportRow, writer bool) {
	b.WriteString("| window_start | window_end | dims | revenue | event_count | revision | result_state |")
	sep := "|---|---|---|---:|---:|---:|---|"
	if writer {
		b.WriteString(" writer |")
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | `%s` | %s | %d | %d | %s |", r.WindowStart, r.WindowEnd, mdCell(r.Dims),
			r.Revenue, r.EventCount, r.Revision, r.ResultState)
		if writer {
			fmt.Fprintf(b, " %s |", mdCell(r.Writer))
		}
		b.WriteString("\n")
	}
}

// mdCell keeps a value inside its table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// pct renders a percentile's bound, "-" for an empty histogram.
func pct(h delay.Histogram, upper int64) string {
	if h.Total == 0 {
		return "-"
	}
	return delay.Below(upper)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
