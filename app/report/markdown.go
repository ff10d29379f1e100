package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/revenue-stream/hourly/model"
)

func writeMarkdown(w io.Writer, r Run) error {
	v := newView(r)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdText(v.Title))
	var meta []string
	if v.Started != "" {
		meta = append(meta, "started "+v.Started)
	}
	if v.Finished != "" {
		meta = append(meta, "finished "+v.Finished)
	}
	if v.Duration != "" {
		meta = append(meta, "took "+v.Duration)
	}
	if len(meta) > 0 {
		b.WriteString(strings.Join(meta, " · ") + "\n\n")
	}
	for _, f := range v.Job {
		fmt.Fprintf(&b, "- %s: %s\n", mdText(f.Name), mdText(f.Value))
	}
	if len(v.Job) > 0 {
		b.WriteString("\n")
	}
	if len(v.Settings) > 0 {
		b.WriteString("| setting | value |\n|---|---|\n")
		for _, s := range v.Settings {
			fmt.Fprintf(&b, "| %s | %s |\n", mdCell(s.Name), mdCell(orNone(s.Value)))
		}
		b.WriteString("\n")
	}

	if v.Conservation != nil {
		mdConservation(&b, v)
	} else if v.NoMetrics {
		fmt.Fprintf(&b, "## Conservation\n\n✗ %s.\n", noMetrics)
	}
	if a := r.Audit; a != nil {
		b.WriteString("\n| audit table (sink, all runs) | rows |\n|---|---:|\n")
		fmt.Fprintf(&b, "| too_late_events | %s |\n| conflict_events | %s |\n| quarantined_events | %s |\n",
			Count(int64(a.TooLate)), Count(int64(a.Conflicts)), Count(int64(a.Quarantined)))
	}

	if len(v.Partitions) > 0 {
		b.WriteString("\n## Watermark vs event time, per partition\n\n" + scopeLog)
		b.WriteString("Partition watermark = largest valid event time seen - out-of-order bound. " +
			"\"Behind\" counts valid events whose event time lay below the watermark just before them.\n\n")
		b.WriteString("| partition | records | valid | behind the watermark | final watermark |\n|---|---:|---:|---:|---|\n")
		for _, p := range v.Partitions {
			behind := Count(int64(p.Trace.Behind))
			if p.BehindPct != "" {
				behind += " (" + p.BehindPct + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(p.Trace.Partition),
				Count(int64(p.Trace.Read)), Count(int64(p.Trace.Valid)), behind, p.Watermark)
		}
	}

	if len(v.Delays) > 0 {
		b.WriteString("\n## Event-time lateness\n\n" + scopeLog)
		b.WriteString("How far behind the largest event time its partition had already shown each valid event arrived " +
			"(event-time lateness; for a replayed history the wall-clock delay would only say when the replay ran).\n\n")
		b.WriteString("| delay | events | share | |\n|---|---:|---:|---|\n")
		var top int64
		for _, d := range v.Delays {
			top = max(top, d.Value)
		}
		for _, d := range v.Delays {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", d.Name, Count(d.Value), d.Share, textBar(d.Value, top, 30))
		}
		if len(v.Percentile) > 0 {
			parts := make([]string, len(v.Percentile))
			for i, p := range v.Percentile {
				parts[i] = p.Name + " " + p.Value
			}
			fmt.Fprintf(&b, "\n%s events: %s\n", Count(v.DelayTotal), strings.Join(parts, ", "))
		}
	}

	if len(v.MetricDelays) > 0 {
		b.WriteString("\n## Delay metrics of the job\n\n" + scopeRun)
		b.WriteString("From the job's bucket counters; a percentile is below the upper bound of the bucket that holds it. " +
			"Arrival delay is read time - event time (for a replayed history, when the replay ran).\n\n")
		b.WriteString("| metric | events | p50 | p95 | p99 |")
		for _, d := range v.MetricDelays[0].Buckets {
			fmt.Fprintf(&b, " %s |", d.Name)
		}
		b.WriteString("\n|---|---:|---:|---:|---:|" + strings.Repeat("---:|", len(v.MetricDelays[0].Buckets)) + "\n")
		for _, m := range v.MetricDelays {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", m.Name, Count(m.Total), m.P50, m.P95, m.P99)
			for _, d := range m.Buckets {
				fmt.Fprintf(&b, " %s |", Count(d.Value))
			}
			b.WriteString("\n")
		}
	}

	if r.Counts != nil || len(r.Windows) > 0 || len(r.Job) > 0 {
		mdWindows(&b, v)
	}
	if rc := v.Reconcile; rc != nil {
		mdReconcile(&b, rc)
	}
	if a := r.Advice; a != nil {
		mdAdvice(&b, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdConservation(b *strings.Builder, v view) {
	c := v.Conservation
	b.WriteString("## Conservation\n\n" + scopeRun)
	b.WriteString("| figure | records | share |\n|---|---:|---:|\n")
	for _, t := range c.Terms {
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.Name, Count(t.Value), t.Share)
	}
	fmt.Fprintf(b, "| **sum** | **%s** | |\n", Count(c.Sum))
	fmt.Fprintf(b, "| **read** | **%s** | %s |\n", Count(c.Read), mark(c.Holds))
	if c.AfterFinal != 0 {
		fmt.Fprintf(b, "| data after FINAL (must be 0) | %s | ✗ |\n", Count(c.AfterFinal))
	}
	terms := make([]string, len(c.Terms))
	for i, t := range c.Terms {
		terms[i] = fmt.Sprintf("%s %d", t.Name, t.Value)
	}
	eq := "="
	if c.Read != c.Sum {
		eq = "≠"
	}
	fmt.Fprintf(b, "\nread %d %s %s: %s", c.Read, eq, strings.Join(terms, " + "), mark(c.Holds))
	if !c.Holds {
		fmt.Fprintf(b, " %s", mdText(c.Problem))
	}
	b.WriteString("\n\n| quarantine reason | records |\n|---|---:|\n")
	for _, q := range v.Reasons {
		fmt.Fprintf(b, "| %s | %s |\n", mdCell(q.Name), Count(q.Value))
	}
	b.WriteString("\n| rows emitted by state | rows |\n|---|---:|\n")
	for _, s := range v.RowsByState {
		fmt.Fprintf(b, "| %s | %s |\n", s.State, Count(s.Count))
	}
}

// mdWindows lists each shown key's current row, then its revisions.
func mdWindows(b *strings.Builder, v view) {
	fmt.Fprintf(b, "\n## Windows\n\nThe current row of each key shown (%d of %d).\n\n", len(v.Current), v.WindowsTotal)
	if len(v.Current) > 0 {
		b.WriteString("| window_start | window_end | dims | revenue | event_count | revision | result_state | writer |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---|---|\n")
		for _, r := range v.Current {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d | %s | %s |\n", model.FormatTime(r.WindowStart), model.FormatTime(r.WindowEnd),
				mdCell("`"+r.Dims+"`"), model.FormatMicros(r.RevenueMicros), r.EventCount, r.Revision, r.State, mdCell(r.Writer))
		}
	}
	fmt.Fprintf(b, "\n## Revisions per window\n\n%s%d keys, %d revisions.", scopeSink, v.WindowsTotal, v.Revisions)
	if v.WindowsOmitted > 0 {
		fmt.Fprintf(b, " Showing %d of %d keys: the latest %d and older ones with LATE revisions; %d omitted (the sink's changelog has them all).",
			len(v.Windows), v.WindowsTotal, LatestWindows, v.WindowsOmitted)
	}
	b.WriteString("\n\n")
	if len(v.Windows) == 0 {
		b.WriteString("No revisions.\n")
		return
	}
	b.WriteString("| window (UTC) | dims | revisions |\n|---|---|---|\n")
	for _, w := range v.Windows {
		var revs []string
		for i, r := range w.Revisions {
			if w.Omitted > 0 && i == w.Head {
				revs = append(revs, fmt.Sprintf("… %d more …", w.Omitted))
			}
			rv := fmt.Sprintf("r%d %s %s (%d)", r.Revision, r.State, r.Revenue, r.Count)
			if r.Writer != "" {
				rv += " " + r.Writer
			}
			revs = append(revs, rv)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", w.Label, mdCell("`"+w.Dims+"`"), mdCell(strings.Join(revs, " → ")))
	}
}

// mdReconcile renders what a reconcile run found.
func mdReconcile(b *strings.Builder, r *Reconcile) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n## Reconcile\n\nRun %s: **%s**\n\n", mdText(r.RunID), r.Verdict())
	if len(r.Unreadable) > 0 {
		p("Sink rows that could not be read (not compared, each counted as unexplained):\n\n")
		for _, u := range r.Unreadable {
			p("- %s\n", mdText(u))
		}
		p("\n")
	}
	p("| | |\n|---|---|\n")
	p("| source | %s (%d partitions) |\n| sink | %s |\n", mdCell("`"+r.Source+"`"), len(r.Partitions), mdCell("`"+r.Sink+"`"))
	p("| range | %s |\n| apply | %t |\n| tolerance | %s |\n", mdCell(r.Range), r.Apply, r.Tolerance)
	if len(r.RawLog) > 0 {
		p("\n### Raw log\n\n| | |\n|---|---|\n")
		for _, f := range r.RawLog {
			p("| %s | %s |\n", mdCell(f.Name), mdCell(f.Value))
		}
	}
	if r.StreamTerms != "" {
		p("\n%s\n", mdText(r.StreamTerms))
	}
	p("\n### Windows\n\n")
	p("%d checked, %d differing (%d material): %s. Total delta %s revenue, %s events.\n\n",
		r.WindowsChecked, r.WindowsDiffering, r.Material, r.Classes(), r.TotalDelta, SignedCount(r.TotalDeltaCount))
	mdDiffs(b, r.Diffs)
	p("\n### Metrics\n\nThe comparison's figures")
	if r.Namespace != "" {
		p(", in the `%s` namespace", r.Namespace)
	}
	if r.MetricsNote != "" {
		p(": %s", mdText(r.MetricsNote))
	}
	p(".\n\n| metric | value |\n|---|--:|\n")
	for _, f := range r.MetricFigures() {
		p("| %s | %s |\n", mdCell(f.Name), f.Value)
	}
	p("\n### Open windows (not yet FINAL)\n\n")
	p("%d checked, %d differing. Reported only: the stream may still correct them, so they are neither material nor applied.\n\n",
		r.OpenChecked, r.OpenDiffering)
	mdDiffs(b, r.Open)
}

func mdDiffs(b *strings.Builder, diffs []Diff) {
	if len(diffs) == 0 {
		b.WriteString("None.\n")
		return
	}
	b.WriteString("| window_start | dims | state | streamed | recomputed | delta | count | too late | classification | material | applied |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|---|---|--:|\n")
	for _, d := range diffs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d → %d | %s (%d) | %s | %t | %s |\n",
			d.WindowStart, mdCell("`"+d.Dims+"`"), orDash(d.StreamedState), d.Streamed, d.Recomputed, d.Delta,
			d.StreamedCount, d.RecompCount, d.TooLate, d.TooLateCount, mdCell(d.ClassCell()), d.Material, d.AppliedCell())
	}
}

// orNone shows an empty setting (no dimensions) as such.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// textBar draws a proportional bar for a Markdown table.
func textBar(v, top int64, width int) string {
	if top == 0 || v == 0 {
		return ""
	}
	n := max(1, int(int64(width)*v/top))
	return strings.Repeat("█", n)
}

// mdText neutralises Markdown and inline HTML markup in data; "_" inside a word never starts
// emphasis.
var mdReplacer = strings.NewReplacer(
	"\\", "\\\\", "`", "\\`", "*", "\\*", "[", "\\[", "]", "\\]",
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "|", "\\|",
	"\r\n", " ", "\n", " ", "\r", " ",
)

func mdText(s string) string { return mdReplacer.Replace(s) }

// mdCell escapes a table cell: a pipe or a newline would break the table.
var mdCodeReplacer = strings.NewReplacer("|", "\\|", "\r\n", " ", "\n", " ", "\r", " ")

func mdCell(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' && !strings.Contains(s[1:len(s)-1], "`") {
		return mdCodeReplacer.Replace(s)
	}
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		// A backtick inside: fall back to escaped text.
		return mdText(s[1 : len(s)-1])
	}
	return mdText(s)
}

// What each section covers: a report mixes three scopes.
const (
	scopeRun  = "*Scope: this run.*\n\n"
	scopeLog  = "*Scope: the whole raw log, traced again for this report (earlier runs' records too).*\n\n"
	scopeSink = "*Scope: the sink's history (every run into it).* "
)
