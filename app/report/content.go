package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// content is what a report says: its sections, sentences, tables and figures, built once from a
// Run (newContent). markdown.go and html.go only lay it out, so both forms say the same in the same
// words; the HTML form adds the charts the sections carry.
type content struct {
	Title, Meta   string
	Job, Settings []Figure
	Sections      []*section
	// The HTML form's summary cards: read and its terms, and whether the identity holds.
	Cards []Figure
	Holds bool
}

// section is a titled part: its scope, sentences, bullet lines, charts, tables and command, in
// that order, then its subsections.
type section struct {
	ID, Title, Scope string
	Paras, Lines     []text
	Tables           []*table
	Command          string
	Subs             []*section
	// The HTML form's charts.
	Traces   []partitionChart
	Delay    *histChart
	Revenue  *revenueChart
	TradeOff *tradeOffChart
}

// table is a table of text cells; Align has an 'r' for each right-aligned (numeric) column.
type table struct {
	Caption, Align, Note string
	Head                 []string
	Rows                 []row
}

type row struct {
	Class string // the HTML row's class: "current", "latewin" or "immaterial"
	Cells []text
}

// text is a sentence or a cell: spans, each plain or set off by its style: "b" bold, "code", else
// HTML classes the Markdown form ignores, but a first class "b" still makes it bold.
type text []span

type span struct{ Text, Style string }

// txt makes a text of parts: a string is plain, a span or text kept as it is.
func txt(parts ...any) text {
	var t text
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			t = append(t, span{Text: p})
		case span:
			t = append(t, p)
		case text:
			t = append(t, p...)
		}
	}
	return t
}

func bold(s string) span { return span{s, "b"} }
func code(s string) span { return span{s, "code"} }

// verdict is a ✓ or ✗ (then why) coloured by ok.
func verdict(ok bool, why string) span {
	if ok {
		return span{"✓", "verdict ok"}
	}
	return span{strings.TrimSpace("✗ " + why), "verdict bad"}
}

func (c *content) section(id, title, scope string) *section {
	s := &section{ID: id, Title: title, Scope: scope}
	c.Sections = append(c.Sections, s)
	return s
}

func (s *section) sub(title string) *section {
	sub := &section{Title: title}
	s.Subs = append(s.Subs, sub)
	return sub
}

func (s *section) para(parts ...any) { s.Paras = append(s.Paras, txt(parts...)) }

func (s *section) table(align string, head ...string) *table {
	t := &table{Align: align, Head: head}
	s.Tables = append(s.Tables, t)
	return t
}

// row adds a row of cells (made by txt); its Class may be set before the next.
func (t *table) row(cells ...any) *row {
	t.Rows = append(t.Rows, row{Cells: slicesx.Map(cells, func(c any) text { return txt(c) })})
	return &t.Rows[len(t.Rows)-1]
}

// Num reports whether column i is numeric.
func (t *table) Num(i int) bool { return i < len(t.Align) && t.Align[i] == 'r' }

// What each section covers: a report mixes three scopes.
const (
	scopeRun  = "Scope: this run."
	scopeLog  = "Scope: the whole raw log, traced again for this report (earlier runs' records too)."
	scopeSink = "Scope: the sink's history (every run into it)."
)

// noMetrics is why a job's run has no conservation verdict.
const noMetrics = "the job reported no metrics: the conservation identity cannot be checked"

func newContent(r Run) content {
	c := content{Title: cmp.Or(r.Title, "Run report"), Job: r.Job}
	var meta []string
	if !r.Started.IsZero() {
		meta = append(meta, "started "+fmtWall(r.Started))
	}
	if !r.Finished.IsZero() {
		meta = append(meta, "finished "+fmtWall(r.Finished))
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() {
		meta = append(meta, "took "+r.Finished.Sub(r.Started).Round(time.Millisecond).String())
	}
	c.Meta = strings.Join(meta, " · ")
	c.Settings = slicesx.Map(slices.Sorted(maps.Keys(r.Settings)), func(k string) Figure { return Figure{k, cmp.Or(r.Settings[k], "(none)")} })
	c.conservation(r)
	c.partitions(r.Partitions)
	c.delays(r.Delays)
	if r.Counts != nil {
		c.metricDelays(*r.Counts)
	}
	if r.Counts != nil || len(r.Windows) > 0 || len(r.Job) > 0 {
		c.windows(r.Windows)
	}
	if r.Reconcile != nil {
		c.reconcile(r.Reconcile)
	}
	if r.Advice != nil {
		c.advice(r.Advice)
	}
	return c
}

// problem is why c breaks SPEC §4's identity (metrics.Counts.Check), or "".
func problem(c metrics.Counts) string {
	if err := c.Check(); err != nil {
		return err.Error()
	}
	return ""
}

func (c *content) conservation(r Run) {
	if r.Counts == nil && len(r.Job) == 0 && r.Audit == nil {
		return
	}
	s := c.section("conservation", "Conservation", "")
	if k := r.Counts; k != nil {
		s.Scope = scopeRun
		s.para("Every record this run read is accounted for exactly once: read = counted + duplicates + conflicts + quarantined + too_late.")
		why := problem(*k)
		c.Cards, c.Holds = []Figure{{"read", Count(k.Read)}}, why == ""
		t := s.table("lrr", "figure", "records", "share")
		for _, m := range k.Terms() {
			t.row(m.Name, Count(m.Value), share(m.Value, k.Read))
			c.Cards = append(c.Cards, Figure{m.Name, Count(m.Value)})
		}
		t.row(bold("sum"), bold(Count(k.Verdicts())), "")
		t.row(bold("read"), bold(Count(k.Read)), verdict(why == "", ""))
		if k.AfterFinal != 0 {
			t.row("data after FINAL (must be 0)", Count(k.AfterFinal), verdict(false, ""))
		}
		s.para(strings.Replace(k.Identity(), " != ", " ≠ ", 1)+": ", verdict(why == "", why))
		t = s.table("lr", "quarantine reason", "records")
		for _, q := range reasons(k.QuarantinedBy) {
			t.row(q.Name, Count(q.Value))
		}
		t = s.table("lr", "rows emitted by state", "rows")
		for _, st := range model.ResultStates {
			t.row(span{st.String(), "badge " + stateClass(st.String())}, Count(k.Rows[st.String()]))
		}
	} else if len(r.Job) > 0 {
		s.para(verdict(false, noMetrics+"."))
	}
	if a := r.Audit; a != nil {
		t := s.table("lr", "audit table (sink, all runs)", "rows")
		for _, n := range auditTables(*a) {
			t.row(n.Name, Count(n.Value))
		}
	}
}

// partitionChart is one partition's trace chart, nil without valid events.
type partitionChart struct {
	Partition string
	Chart     *traceChart
}

func (c *content) partitions(ps []PartitionTrace) {
	if len(ps) == 0 {
		return
	}
	s := c.section("watermarks", "Watermark vs event time, per partition", scopeLog)
	s.para("Partition watermark = largest valid event time seen - out-of-order bound. " +
		"\"Behind\" counts valid events whose event time lay below the watermark just before them.")
	t := s.table("lrrrl", "partition", "records", "valid", "behind the watermark", "final watermark")
	for _, p := range ps {
		behind := Count(int64(p.Behind))
		if pct := share(int64(p.Behind), int64(p.Valid)); pct != "" {
			behind += " (" + pct + ")"
		}
		t.row(p.Partition, Count(int64(p.Read)), Count(int64(p.Valid)), behind, fmtEventTime(p.Watermark))
		pc := partitionChart{Partition: p.Partition}
		if len(p.Points) > 0 {
			pc.Chart = newTraceChart(p)
		}
		s.Traces = append(s.Traces, pc)
	}
}

func (c *content) delays(h delay.Histogram) {
	if len(h.Buckets) == 0 {
		return
	}
	s := c.section("delays", "Event-time lateness", scopeLog)
	s.para("How far behind the largest event time its partition had already shown each valid event arrived " +
		"(event-time lateness; for a replayed history the wall-clock delay would only say when the replay ran).")
	if h.Total > 0 {
		s.para(fmt.Sprintf("%s events: p50 %s, p95 %s, p99 %s.", Count(h.Total), Delay(h.P50), Delay(h.P95), Delay(h.P99)))
		s.Delay = newHistChart(h)
	}
	t := s.table("lrrl", "delay", "events", "share", "")
	top := slices.Max(h.Counts())
	for _, b := range h.Buckets {
		t.row(b.Label, Count(b.Count), share(b.Count, h.Total), textBar(b.Count, top, 30))
	}
}

// metricDelays tables the job's delay metrics, none when it counted no valid event.
func (c *content) metricDelays(k metrics.Counts) {
	var t *table
	for _, m := range k.Delays() {
		if m.Total == 0 {
			continue
		}
		if t == nil {
			s := c.section("delay-metrics", "Delay metrics of the job", scopeRun)
			s.para("From the job's bucket counters (event_lateness_* and arrival_delay_*); a percentile is below the upper bound " +
				"of the bucket that holds it. Event lateness is how far behind its partition's largest event time so far an event " +
				"arrived; arrival delay is read time - event time (for a replayed history, when the replay ran).")
			head := []string{"metric", "events", "p50", "p95", "p99"}
			for _, b := range m.Buckets {
				head = append(head, b.Label)
			}
			t = s.table("l"+strings.Repeat("r", len(head)-1), head...)
		}
		cells := []any{m.Label, Count(m.Total), delay.Below(m.P50), delay.Below(m.P95), delay.Below(m.P99)}
		for _, b := range m.Buckets {
			cells = append(cells, Count(b.Count))
		}
		t.row(cells...)
	}
}

// windows lists each shown key's current row, then its revisions.
func (c *content) windows(all []WindowHistory) {
	shown, omitted := selectWindows(all)
	cur := c.section("windows", "Windows", "")
	t := cur.table("lllrrrll", "window_start", "window_end", "dims", "revenue", "event_count", "revision", "result_state", "writer")
	revisions := 0
	for _, w := range all {
		revisions += len(w.Revisions)
	}
	s := c.section("revisions", "Revisions per window", scopeSink)
	s.para(fmt.Sprintf("%d keys, %d revisions.", len(all), revisions))
	if omitted > 0 {
		s.para(fmt.Sprintf("Showing %d of %d keys: the latest %d and older ones with LATE revisions; %d omitted (the sink's changelog has them all).",
			len(shown), len(all), LatestWindows, omitted))
	}
	var revs *table
	if len(shown) == 0 {
		cur.Tables = nil
		s.para("No revisions.")
	} else {
		s.para("Every accepted snapshot of each (window, dims) key, in revision order (",
			txt(span{"EARLY", "badge early"}, " ", span{"ON_TIME", "badge ontime"}, " ", span{"LATE", "badge late"}, " ", span{"FINAL", "badge final"}),
			"), with its revenue and (event count); each row is a complete total, never a delta.")
		revs = s.table("lll", "window (UTC)", "dims", "revisions")
	}
	var views []Window
	for _, h := range shown {
		w := NewWindow(h, reportTrim, noWriteTimes)
		views = append(views, w)
		if n := len(h.Revisions); n > 0 {
			t.row(w.Start, w.End, code(w.Dims), w.Revenue, fmt.Sprint(w.Count), fmt.Sprint(w.Revision), w.State, h.Revisions[n-1].Writer)
		}
		var cell text
		for i, r := range w.Revisions {
			if i > 0 {
				cell = txt(cell, " → ")
			}
			if w.Omitted > 0 && i == w.Head {
				cell = txt(cell, span{fmt.Sprintf("… %d more …", w.Omitted), "r"}, " → ")
			}
			cell = txt(cell, span{fmt.Sprintf("r%d", r.Revision), "r"}, " ", span{r.State, "badge " + stateClass(r.State)},
				" "+r.Revenue+" ", span{fmt.Sprintf("(%d)", r.Count), "r"})
			if r.Writer != "" {
				cell = txt(cell, " ", span{r.Writer, "w"})
			}
		}
		if r := revs.row(fmtWindow(h.WindowStart, h.WindowEnd), code(h.Dims), cell); h.HasLate() {
			r.Class = "latewin"
		}
	}
	cur.para(fmt.Sprintf("The current row of each key shown (%d of %d).", len(t.Rows), len(all)))
	s.Revenue = newRevenueChart(views)
}

func (c *content) reconcile(r *Reconcile) {
	s := c.section("reconcile", "Reconcile", "")
	ok := "b verdict ok"
	if r.ExitCode != 0 {
		ok = "b verdict bad"
	}
	s.para("Run ", r.RunID, ": ", span{r.Verdict(), ok})
	if len(r.Unreadable) > 0 {
		s.para("Sink rows that could not be read (not compared, each counted as unexplained):")
		for _, u := range r.Unreadable {
			s.Lines = append(s.Lines, txt(code(u)))
		}
	}
	t := s.table("ll", "setting", "value")
	t.row("source", txt(code(r.Source), fmt.Sprintf(" (%d partitions)", len(r.Partitions))))
	t.row("sink", code(r.Sink))
	t.row("range", r.Range)
	t.row("apply", fmt.Sprint(r.Apply))
	t.row("tolerance", r.Tolerance)
	if len(r.RawLog) > 0 || r.StreamTerms != "" {
		raw := s.sub("Raw log")
		if r.StreamTerms != "" {
			raw.para(r.StreamTerms)
		}
		t := raw.table("lr", "figure", "value")
		for _, f := range r.RawLog {
			t.row(f.Name, f.Value)
		}
	}
	w := s.sub("Windows")
	w.para(fmt.Sprintf("%d checked, %d differing (%d material): %s. Total delta %s revenue, %s events.",
		r.WindowsChecked, r.WindowsDiffering, r.Material, r.classes(true), r.TotalDelta, SignedCount(r.TotalDeltaCount)))
	diffTable(w, r.Diffs)
	m := s.sub("Metrics")
	figures := txt("The comparison's figures")
	if r.Namespace != "" {
		figures = txt(figures, ", in the ", code(r.Namespace), " namespace")
	}
	if r.MetricsNote != "" {
		figures = txt(figures, ": "+r.MetricsNote)
	}
	m.para(figures, ".")
	t = m.table("lr", "metric", "value")
	for _, f := range r.MetricFigures() {
		t.row(f.Name, f.Value)
	}
	o := s.sub("Open windows (not yet FINAL)")
	o.para(fmt.Sprintf("%d checked, %d differing. Reported only: the stream may still correct them, so they are neither material nor applied.",
		r.OpenChecked, r.OpenDiffering))
	diffTable(o, r.Open)
}

func diffTable(s *section, diffs []Diff) {
	if len(diffs) == 0 {
		s.para("None.")
		return
	}
	t := s.table("lllrrrrrlll", "window_start", "dims", "state", "streamed", "recomputed", "delta", "count", "too late",
		"classification", "material", "applied")
	for _, d := range diffs {
		r := t.row(d.WindowStart, code(d.Dims), cmp.Or(d.StreamedState, "-"), d.Streamed, d.Recomputed, d.Delta,
			fmt.Sprintf("%d → %d", d.StreamedCount, d.RecompCount), fmt.Sprintf("%s (%d)", d.TooLate, d.TooLateCount),
			d.ClassCell(), fmt.Sprint(d.Material), d.AppliedCell())
		if !d.Material {
			r.Class = "immaterial"
		}
	}
}

// advice lays the advisor's sections out; the current setting's row is marked.
func (c *content) advice(a *Advice) {
	for _, as := range a.Sections {
		s := c.section("", as.Title, "")
		s.Lines = slicesx.Map(as.Lines, func(l string) text { return txt(l) })
		for _, at := range as.Tables {
			t := s.table("", at.Head...)
			t.Caption, t.Note = at.Caption, at.Note
			for k, cells := range at.Rows {
				r := slicesx.Map(cells, func(cell string) any { return cell })
				if k == at.Current && len(cells) > 0 {
					r[0] = txt(bold(cells[0]), " (current)")
				}
				if row := t.row(r...); k == at.Current {
					row.Class = "current"
				}
			}
		}
		s.Command = as.Command
		if as.TradeOff {
			s.TradeOff = newTradeOffChart(a.TradeOff)
		}
	}
}
