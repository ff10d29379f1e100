package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// view is a Run prepared once for the HTML and Markdown forms, so they never disagree.
type view struct {
	Run      Run
	Title    string
	Started  string
	Finished string
	Duration string
	Settings []Figure
	Job      []Figure

	// Conservation is nil without counts; NoMetrics says a job ran but reported none.
	Conservation *conservation
	NoMetrics    bool
	Reasons      []metrics.Term
	RowsByState  []stateCount

	Partitions []partitionView
	Delays     []part
	DelayTotal int64
	Percentile []Figure
	// MetricDelays are the job's own delay metrics, when it reported any.
	MetricDelays []metricDelay

	Windows        []windowView
	WindowsTotal   int
	WindowsOmitted int
	Revisions      int
	// Current is the latest revision of each shown key, as its JSON row.
	Current []JSONRow

	Reconcile *Reconcile
}

// conservation is SPEC §4's identity for the run.
type conservation struct {
	Terms []part // counted, duplicates, conflicts, quarantined, too_late
	Read  int64
	Sum   int64
	Holds bool
	// Problem is why it does not hold (metrics.Counts.Check), or "".
	Problem    string
	AfterFinal int64
}

// part is a count and its share of a whole (a term of read, a delay bucket of all delays), in
// percent, formatted.
type part struct {
	metrics.Term
	Share string
}

type stateCount struct {
	State string
	Class string
	Count int64
}

type partitionView struct {
	Trace     PartitionTrace
	Watermark string
	BehindPct string
	Chart     *traceChart
}

// metricDelay is one delay metric of the job: its percentiles and bucket counts.
type metricDelay struct {
	Name, What    string
	Total         int64
	P50, P95, P99 string
	Buckets       []part
}

// windowView is a shown key with its window as the report spells it, and whether it has a LATE
// revision.
type windowView struct {
	Window
	Label string
	Late  bool
}

func newView(r Run) view {
	v := view{
		Run:       r,
		Title:     cmp.Or(r.Title, "Run report"),
		Started:   fmtWall(r.Started),
		Finished:  fmtWall(r.Finished),
		Job:       r.Job,
		NoMetrics: r.Counts == nil && len(r.Job) > 0,
		Reconcile: r.Reconcile,
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() {
		v.Duration = r.Finished.Sub(r.Started).Round(time.Millisecond).String()
	}
	for _, k := range slices.Sorted(maps.Keys(r.Settings)) {
		v.Settings = append(v.Settings, Figure{k, r.Settings[k]})
	}
	if c := r.Counts; c != nil {
		cv := newConservation(*c)
		v.Conservation = &cv
		v.Reasons = reasons(c.QuarantinedBy)
		for _, s := range model.ResultStates {
			v.RowsByState = append(v.RowsByState, stateCount{s.String(), stateClass(s.String()), c.Rows[s.String()]})
		}
		v.MetricDelays = metricDelays(*c)
	}
	for _, tr := range r.Partitions {
		pv := partitionView{Trace: tr, Watermark: fmtEventTime(tr.Watermark), BehindPct: share(int64(tr.Behind), int64(tr.Valid))}
		if len(tr.Points) > 0 {
			pv.Chart = newTraceChart(tr)
		}
		v.Partitions = append(v.Partitions, pv)
	}
	v.DelayTotal, v.Delays = r.Delays.Total, delayBuckets(r.Delays)
	if v.DelayTotal > 0 {
		v.Percentile = []Figure{
			{"p50", Delay(r.Delays.P50)},
			{"p95", Delay(r.Delays.P95)},
			{"p99", Delay(r.Delays.P99)},
		}
	}
	shown, omitted := selectWindows(r.Windows)
	v.WindowsTotal, v.WindowsOmitted = len(r.Windows), omitted
	for _, w := range r.Windows {
		v.Revisions += len(w.Revisions)
	}
	for _, w := range shown {
		v.Windows = append(v.Windows, windowView{Window: NewWindow(w, reportTrim, noWriteTimes), Label: fmtWindow(w.WindowStart, w.WindowEnd), Late: w.HasLate()})
		if n := len(w.Revisions); n > 0 {
			v.Current = append(v.Current, JSONRow(w.Revisions[n-1]))
		}
	}
	return v
}

// metricDelays lists the job's delay metrics, none when it counted no valid event.
func metricDelays(c metrics.Counts) []metricDelay {
	var out []metricDelay
	for _, m := range []struct {
		name, what string
		h          delay.Histogram
	}{
		{"event lateness", "behind the partition's largest event time so far", c.Lateness},
		{"arrival delay", "read time − event time", c.Arrival},
	} {
		if m.h.Total == 0 {
			continue
		}
		md := metricDelay{Name: m.name, What: m.what, Total: m.h.Total,
			P50: delay.Below(m.h.P50), P95: delay.Below(m.h.P95), P99: delay.Below(m.h.P99)}
		md.Buckets = delayBuckets(m.h)
		out = append(out, md)
	}
	return out
}

func delayBuckets(h delay.Histogram) []part {
	var out []part
	for _, b := range h.Buckets {
		out = append(out, part{metrics.Term{Name: b.Label, Value: b.Count}, share(b.Count, h.Total)})
	}
	return out
}

func newConservation(c metrics.Counts) conservation {
	cv := conservation{Read: c.Read, Sum: c.Verdicts(), AfterFinal: c.AfterFinal}
	for _, t := range c.Terms() {
		cv.Terms = append(cv.Terms, part{t, share(t.Value, c.Read)})
	}
	if err := c.Check(); err != nil {
		cv.Problem = err.Error()
	}
	cv.Holds = cv.Problem == ""
	return cv
}

// reasons lists every SPEC reason in SPEC order, zeros too, then any other the counters carry.
func reasons(by map[string]int64) []metrics.Term {
	out := make([]metrics.Term, 0, len(model.QuarantineReasons))
	known := map[string]bool{}
	for _, r := range model.QuarantineReasons {
		known[r] = true
		out = append(out, metrics.Term{Name: r, Value: by[r]})
	}
	for _, r := range slices.Sorted(maps.Keys(by)) {
		if !known[r] {
			out = append(out, metrics.Term{Name: r, Value: by[r]})
		}
	}
	return out
}

// noWriteTimes: a report's histories carry no write times.
func noWriteTimes(model.Row) (time.Time, bool) { return time.Time{}, false }

// stateClass is a state badge's CSS class, from a fixed set: safe in an attribute.
func stateClass(state string) string {
	switch state {
	case "EARLY":
		return "early"
	case "ON_TIME":
		return "ontime"
	case "LATE":
		return "late"
	case "FINAL":
		return "final"
	}
	return "unknown"
}

// fmtWall renders a wall-clock instant in UTC, or "" when unset.
func fmtWall(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// fmtEventTime renders an event time or watermark, "—" for none.
func fmtEventTime(ms int64) string {
	if ms == model.NoWatermark {
		return "—"
	}
	return model.FormatTime(ms)
}

// fmtWindow renders [start, end), the end's date left out on the same day or its midnight.
func fmtWindow(start, end int64) string {
	s, e := time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()
	layout, clock := "2006-01-02 15:04", "15:04"
	if start%60_000 != 0 || end%60_000 != 0 {
		layout, clock = "2006-01-02 15:04:05.000", "15:04:05.000"
	}
	endLayout := layout
	nextMidnight := s.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if s.YearDay() == e.YearDay() && s.Year() == e.Year() || e.Equal(nextMidnight) {
		endLayout = clock
	}
	return "[" + s.Format(layout) + ", " + e.Format(endLayout) + ")"
}

// Delay renders a delay in ms compactly: 0s, 42s, 4m12s, 3h05m, 2d04h.
func Delay(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int64(d/(24*time.Hour)), int64(d%(24*time.Hour)/time.Hour))
}

// share is part/whole in percent with one decimal, "" for an empty whole.
func share(part, whole int64) string {
	if whole == 0 {
		return ""
	}
	if part > 0 && 1000*part < whole {
		return "<0.1%" // not "0.0%": something is there
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + "%"
}

// Count renders an integer with thousands separators, as every form does.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
