package advise

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/model"
)

// MaxSegments is how many segments the tables list (the JSON has them all).
const MaxSegments = 12

// NewReport lays the advice out as the report's sections, for the summary and every form.
func NewReport(a *Advice) *report.Advice {
	r := &report.Advice{Title: "Settings advice for " + a.Log.Source, Figures: a}
	r.Sections = []report.AdviceSection{a.logSection(), a.boundSection(), a.latenessSection(), a.retentionSection(), a.idleSection()}
	if a.Job != nil {
		r.Sections = append(r.Sections, a.jobSection())
	}
	r.Sections = append(r.Sections, a.recommendationSection())
	rec := a.Recommendation.Outcome.Bound
	for _, b := range a.Bounds {
		t := b.Fates.Total()
		r.TradeOff = append(r.TradeOff, report.TradeOffPoint{
			Bound: b.Bound.String(), BoundMs: time.Duration(b.Bound).Milliseconds(),
			LateEvents: percent(b.Fates.Late.Events, t.Events), LateRevenue: percent(b.Fates.Late.RevenueMicros, t.RevenueMicros),
			TooLateEvents: percent(b.Fates.TooLate.Events, t.Events),
			Current:       b.Bound == Duration(a.Options.Watermark.OutOfOrderBound), Recommended: b.Bound == rec,
		})
	}
	return r
}

func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// shares renders "1.23% / 1.30%": of events / of revenue.
func shares(part, total Tally) string {
	return Share(part.Events, total.Events) + " / " + Share(part.RevenueMicros, total.RevenueMicros)
}

func (lt Latency) String() string {
	if !lt.Known {
		return "bound + transport delay (no arrival clock)"
	}
	if lt.Windows == 0 {
		return "—"
	}
	s := report.Delay(lt.P50) + " / " + report.Delay(lt.P95) + " / " + report.Delay(lt.Max)
	if lt.Never > 0 {
		s += fmt.Sprintf(" (%d never)", lt.Never)
	}
	return s
}

func tally(t Tally) string {
	return report.Count(t.Events) + " (" + model.FormatMicros(t.RevenueMicros) + ")"
}

func (a *Advice) logSection() report.AdviceSection {
	l, o := a.Log, a.Options
	var q int64
	for _, n := range l.Quarantined {
		q += n
	}
	s := report.AdviceSection{Title: "Raw log"}
	add := func(format string, args ...any) { s.Lines = append(s.Lines, fmt.Sprintf(format, args...)) }
	add("%s: %d partitions, %s records (%s valid, %s quarantined), %s event ids", l.Source, len(l.Partitions),
		report.Count(l.Read), report.Count(l.Valid), report.Count(q), report.Count(int64(l.IDs)))
	switch {
	case l.Clock == NoClock.String():
		add("arrival clock: none (no --arrival-field, not a Pub/Sub archive): late shares are judged by each partition's own watermark, as a replay judges them; no ON_TIME timing, no idleness")
	default:
		clock := l.Clock
		if o.ArrivalField != "" {
			clock += " " + o.ArrivalField
		}
		add("arrival clock: %s, from %s to %s", clock, model.FormatTime(l.First), model.FormatTime(l.Last))
		if l.NoArrival > 0 {
			add("records without a readable arrival instant (unreadable lines, mostly), which took their predecessor's: %s", report.Count(l.NoArrival))
		}
	}
	if !o.Range.All() {
		add("windows measured: %s (every record is replayed: watermarks need them all)", o.Range)
	}
	add("current settings: %s", strings.Join(a.Settings, " "))
	d := a.Lateness
	add("event lateness (behind the largest event time its partition had shown) of %s valid records: p50 %s, p90 %s, p95 %s, p99 %s, max %s",
		report.Count(d.Count), report.Delay(d.P50), report.Delay(d.P90), report.Delay(d.P95), report.Delay(d.P99), report.Delay(d.Max))
	return s
}

func (a *Advice) boundSection() report.AdviceSection {
	o := a.Options
	s := report.AdviceSection{Title: "Out-of-order bound (--ooo-bound)", TradeOff: true}
	s.Lines = []string{fmt.Sprintf("with --idle-timeout=%s --allowed-lateness=%s; shares of events / of revenue; ON_TIME: processing time after the window end",
		cli.FormatDuration(o.Watermark.IdleTimeout), cli.FormatDuration(o.Triggers.AllowedLateness))}
	t := table([]string{"bound", "on time", "late (LATE revisions)", "too late", "ON_TIME p50 / p95 / max"}, a.Bounds,
		func(b Outcome) bool { return b.Bound == Duration(o.Watermark.OutOfOrderBound) },
		func(b Outcome) []string {
			tot := b.Fates.Total()
			return []string{b.Bound.String(), shares(b.Fates.OnTime, tot), shares(b.Fates.Late, tot), shares(b.Fates.TooLate, tot), b.OnTime.String()}
		})
	s.Tables = append(s.Tables, t, a.split("partition", a.Log.Partitions, func(b Outcome) []Fates { return b.ByPartition }, len(a.Log.Partitions)))
	if len(o.Segments) > 0 {
		s.Tables = append(s.Tables, a.split("segment "+strings.Join(o.Segments, ","), a.Log.Segments, func(b Outcome) []Fates { return b.BySegment }, MaxSegments))
	}
	return s
}

// table is one row per value tried, the current one marked.
func table[T any](head []string, rows []T, current func(T) bool, cells func(T) []string) report.Table {
	t := report.NewTable("", head...)
	for i, r := range rows {
		if current(r) {
			t.Current = i
		}
		t.Rows = append(t.Rows, cells(r))
	}
	return t
}

// split is the late / too-late share per partition or segment, a column per bound.
func (a *Advice) split(what string, names []string, by func(Outcome) []Fates, limit int) report.Table {
	t := report.NewTable("late % / too late % of events by "+what+", per bound", what)
	if len(a.Bounds) == 0 {
		return t
	}
	cur := a.Bounds[0]
	for _, b := range a.Bounds {
		t.Head = append(t.Head, b.Bound.String())
		if b.Bound == Duration(a.Options.Watermark.OutOfOrderBound) {
			cur = b
		}
	}
	var idx []int
	for i := range names {
		if by(cur)[i].Total().Events > 0 {
			idx = append(idx, i)
		}
	}
	if what != "partition" {
		slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(by(cur)[y].Total().Events, by(cur)[x].Total().Events) })
	}
	if len(idx) > limit {
		t.Note = fmt.Sprintf("the %d with the most events of %d; the JSON form has them all", limit, len(idx))
		idx = idx[:limit]
	}
	for _, i := range idx {
		row := []string{segmentLabel(names[i])}
		for _, b := range a.Bounds {
			f := by(b)[i]
			n := f.Total().Events
			row = append(row, strings.TrimSuffix(Share(f.Late.Events, n), "%")+" / "+strings.TrimSuffix(Share(f.TooLate.Events, n), "%"))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func (a *Advice) latenessSection() report.AdviceSection {
	o := a.Options
	return report.AdviceSection{Title: "Allowed lateness (--allowed-lateness)",
		Lines: []string{fmt.Sprintf("with --ooo-bound=%s --idle-timeout=%s; too late is left to reconciliation (audited in too_late_events)",
			cli.FormatDuration(o.Watermark.OutOfOrderBound), cli.FormatDuration(o.Watermark.IdleTimeout))},
		Tables: []report.Table{table([]string{"lateness", "late (LATE revisions)", "too late", "too late events", "too late revenue"}, a.LatenessTable,
			func(r Outcome) bool { return r.Lateness == Duration(o.Triggers.AllowedLateness) },
			func(r Outcome) []string {
				tot := r.Fates.Total()
				return []string{r.Lateness.String(), shares(r.Fates.Late, tot), shares(r.Fates.TooLate, tot), report.Count(r.Fates.TooLate.Events), model.FormatMicros(r.Fates.TooLate.RevenueMicros)}
			})},
	}
}

func (a *Advice) retentionSection() report.AdviceSection {
	o, c := a.Options, a.Copies
	floor := o.Triggers.Lifetime()
	s := report.AdviceSection{Title: "Dedup retention (--dedup-retention)"}
	add := func(format string, args ...any) { s.Lines = append(s.Lines, fmt.Sprintf(format, args...)) }
	add("cmd/launch refuses less than window + allowed lateness = %s: the too-late gate comes before dedup, so a longer horizon changes no verdict", cli.FormatDuration(floor))
	add("later copies of an event id: %s (%s identical, %s conflicting)", report.Count(c.Copies), report.Count(c.Identical), report.Count(c.Conflicting))
	if c.Copies > 0 {
		g := c.GapEventTime
		add("watermark past the first copy's window end when a copy came: p50 %s, p90 %s, p99 %s, max %s", report.Delay(g.P50), report.Delay(g.P90), report.Delay(g.P99), report.Delay(g.Max))
		if g := c.GapArrival; g.Count > 0 {
			add("arrival after the first copy: p50 %s, p90 %s, p99 %s, max %s", report.Delay(g.P50), report.Delay(g.P90), report.Delay(g.P99), report.Delay(g.Max))
		}
	}
	t := table([]string{"horizon", "id forgotten before a copy came", "copy later than it (arrival)", "counted twice", "revenue counted twice", "too late anyway (reconcile)"}, a.Retention,
		func(r RetentionRow) bool { return r.Retention == Duration(o.Retention()) },
		func(r RetentionRow) []string {
			name, arrival := r.Retention.String(), "—"
			if r.Refused {
				name += " (refused)"
			}
			if r.BeyondArrival >= 0 {
				arrival = report.Count(r.BeyondArrival)
			}
			return []string{name, report.Count(r.BeyondEventTime), arrival, report.Count(r.DoubleCounted.Events), model.FormatMicros(r.DoubleCounted.RevenueMicros), report.Count(r.ToReconcile)}
		})
	s.Tables = []report.Table{t}
	return s
}

func (a *Advice) idleSection() report.AdviceSection {
	o := a.Options
	s := report.AdviceSection{Title: "Idle timeout (--idle-timeout)"}
	if len(a.Idle) == 0 {
		s.Lines = []string{"needs an arrival clock (--arrival-field, or a Pub/Sub archive's publish times): silences are processing time"}
		return s
	}
	s.Lines = []string{fmt.Sprintf("with --ooo-bound=%s --allowed-lateness=%s; \"by idleness\": judged late or too late, but not had no partition gone idle",
		cli.FormatDuration(o.Watermark.OutOfOrderBound), cli.FormatDuration(o.Triggers.AllowedLateness))}
	sl := report.NewTable("silences (processing time between arrivals) per partition", "partition", "records", "longest")
	for _, it := range a.Idle {
		sl.Head = append(sl.Head, "≥ "+it.Idle.String())
	}
	for _, p := range a.Silences {
		row := []string{p.Partition, report.Count(p.Records), report.Delay(p.Longest)}
		for _, n := range p.AtLeast {
			row = append(row, report.Count(n))
		}
		sl.Rows = append(sl.Rows, row)
	}
	t := table([]string{"timeout", "went idle", "came back with late data", "late by idleness", "too late by idleness", "ON_TIME p50 / p95 / max"}, a.Idle,
		func(r IdleRow) bool { return r.Idle == Duration(o.Watermark.IdleTimeout) },
		func(r IdleRow) []string {
			return []string{r.Idle.String(), report.Count(int64(r.Episodes)), report.Count(int64(r.EpisodesWithLoss)), tally(r.LateByIdle), tally(r.TooLateByIdle), r.OnTime.String()}
		})
	s.Tables = []report.Table{sl, t}
	return s
}

func (a *Advice) jobSection() report.AdviceSection {
	j := a.Job
	s := report.AdviceSection{Title: "What the job measured (" + j.Path + ")"}
	s.Lines = []string{
		fmt.Sprintf("the job ran with --ooo-bound=%s --allowed-lateness=%s: read %s, duplicates %s, conflicts %s, too late %s",
			cmp.Or(j.Settings["ooo-bound"], "—"), cmp.Or(j.Settings["allowed-lateness"], "—"), report.Count(j.Read), report.Count(j.Duplicates), report.Count(j.Conflicts), report.Count(j.TooLate)),
		"the job counts every valid event it reads into its delay buckets: read from its start, the same log gives the advisor's lateness buckets; arrival delay (read time − event time) only a live run measures",
	}
	t := report.NewTable("", "delay")
	t.Rows = [][]string{{"event lateness (job)"}, {"event lateness (advisor)"}, {"arrival delay (job)"}}
	for i, b := range j.Lateness.Buckets {
		t.Head = append(t.Head, b.Label)
		t.Rows[0] = append(t.Rows[0], report.Count(b.Count))
		var mine, arr int64
		if i < len(a.Lateness.Buckets) {
			mine = a.Lateness.Buckets[i]
		}
		if i < len(j.Arrival.Buckets) {
			arr = j.Arrival.Buckets[i].Count
		}
		t.Rows[1], t.Rows[2] = append(t.Rows[1], report.Count(mine)), append(t.Rows[2], report.Count(arr))
	}
	s.Tables = []report.Table{t}
	return s
}

// segmentLabel shows a segment as field=value pairs; a partition name stays as it is.
func segmentLabel(s string) string {
	var fields map[string]json.RawMessage
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &fields) != nil {
		return s
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := string(fields[k])
		var str string
		if json.Unmarshal(fields[k], &str) == nil {
			v = str
		}
		out = append(out, k+"="+v)
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ",")
}

func (a *Advice) recommendationSection() report.AdviceSection {
	o, r := a.Options, a.Recommendation
	t := o.Targets
	var ts []string
	if t.LateSharePPM >= 0 {
		ts = append(ts, "late ≤ "+PPM(t.LateSharePPM))
	}
	if t.TooLateSharePPM >= 0 {
		ts = append(ts, "too late ≤ "+PPM(t.TooLateSharePPM))
	}
	if t.OnTime > 0 {
		ts = append(ts, "ON_TIME ≤ "+cli.FormatDuration(t.OnTime)+" after the window end")
	}
	ts = append(ts, fmt.Sprintf("counted twice ≤ %d", t.ResidualDups))
	s := report.AdviceSection{Title: "Recommendation (targets: " + strings.Join(ts, ", ") + ")"}
	if r.Met {
		s.Lines = append(s.Lines, "the smallest candidate settings that meet every target:")
	} else {
		s.Lines = append(s.Lines, "no candidate meets every target; the smallest meeting the others:")
		for _, m := range r.Misses {
			s.Lines = append(s.Lines, "missed: "+m)
		}
	}
	f, tot := r.Outcome.Fates, r.Outcome.Fates.Total()
	s.Lines = append(s.Lines, fmt.Sprintf("achieves: late %s, too late %s (events / revenue), ON_TIME p50 / p95 / max %s, counted twice %d",
		shares(f.Late, tot), shares(f.TooLate, tot), r.Outcome.OnTime, r.Outcome.DoubleCounted.Events))
	s.Lines = append(s.Lines, "a new policy is a configuration release: the advisor never changes a running job")
	s.Command = "go run ./cmd/launch " + strings.Join(r.Flags, " ")
	return s
}
