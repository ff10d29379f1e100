package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/triggers"
)

// Classifications of reconcile_diffs (SPEC §5).
const (
	// ClassTooLate: the FINAL row is short by exactly the too_late_events.
	ClassTooLate = "too_late"
	// ClassMissingWindow: no row for a closed window whose events were all too late.
	ClassMissingWindow = "missing_window"
	// ClassUnexplained: any other difference; someone should look.
	ClassUnexplained = "unexplained"
)

// Key is a row key: window start and canonical dims.
type Key struct {
	WindowStart int64 // epoch ms
	Dims        string
}

func (k Key) String() string { return model.FormatTime(k.WindowStart) + " " + k.Dims }

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
}

// Diff is one window key whose streamed and recomputed totals differ.
type Diff struct {
	Key
	// Streamed is the sink's current row (HasRow false: none).
	Streamed model.Row
	HasRow   bool
	// Recomputed is the raw log's total for the key.
	Recomputed Totals
	// Classification is a Class* constant; empty for an open window.
	Classification string
	// Material: a count difference or a revenue one above the tolerance; only these are applied.
	Material bool
	// InLog: the raw log has events for the window. Without, a material diff is held back from
	// --apply: a trimmed log or a wrong --source looks the same.
	InLog bool
	// AppliedRevision is the revision --apply wrote, 0 if none.
	AppliedRevision int64
}

// Applicable reports whether --apply writes this diff's correction.
func (d Diff) Applicable() bool { return d.Material && d.InLog }

// DeltaMicros is recomputed minus streamed revenue.
func (d Diff) DeltaMicros() int64 { return d.Recomputed.RevenueMicros - d.Streamed.RevenueMicros }

// DeltaCount is recomputed minus streamed event count.
func (d Diff) DeltaCount() int64 { return d.Recomputed.Count - d.Streamed.EventCount }

// Comparison is the outcome of Compare.
type Comparison struct {
	// Checked counts the closed keys compared (FINAL rows and missing windows).
	Checked int
	// Diffs are the closed keys that differ, by key: all go to reconcile_diffs.
	Diffs []Diff
	// OpenChecked counts keys the stream may still change, Open those that differ: reported only,
	// since a reconcile revision would collide with the stream's next one.
	OpenChecked int
	Open        []Diff
	// Unreadable lists sink rows that could not be read: not compared, each unexplained (SPEC §6).
	Unreadable []Unreadable
	// FutureCounted counts the checked keys that agree once the future events a restart counted
	// are in (Diff.futureCounted): not differences.
	FutureCounted int
}

// Unreadable is a sink row that could not be read.
type Unreadable struct {
	Table       string `json:"table"`
	WindowStart string `json:"window_start"`
	Dims        string `json:"dims"`
	Column      string `json:"column"`
	Reason      string `json:"reason"`
}

// String is the row's one line in the summary.
func (u Unreadable) String() string {
	return fmt.Sprintf("%s row window_start=%s dims=%s: column %s: %s", u.Table, u.WindowStart, u.Dims, u.Column, u.Reason)
}

// Held returns the material diffs --apply holds back (see Diff.InLog).
func (c Comparison) Held() []Diff {
	return c.where(func(d Diff) bool { return d.Material && !d.InLog })
}

// Unexplained returns the material diffs no audit table accounts for, and the held ones.
func (c Comparison) Unexplained() []Diff {
	return c.where(func(d Diff) bool { return d.Material && (d.Classification == ClassUnexplained || !d.InLog) })
}

// Material returns the material diffs.
func (c Comparison) Material() []Diff { return c.where(func(d Diff) bool { return d.Material }) }

func (c Comparison) where(keep func(Diff) bool) []Diff {
	return slices.DeleteFunc(slices.Clone(c.Diffs), func(d Diff) bool { return !keep(d) })
}

// Metrics of a comparison: Beam counters in Namespace (see Comparison.Metrics). The delta sums are
// of absolute values, so a gain cannot hide a loss; windows_differing_<class> counts a class.
const (
	MetricWindowsCompared  = "windows_compared"
	MetricWindowsDiffering = "windows_differing"
	MetricWindowsMaterial  = "windows_material"
	MetricDeltaMicrosAbs   = "delta_micros_abs"
	MetricDeltaCountAbs    = "delta_count_abs"
	MetricOpenCompared     = "open_windows_compared"
	MetricOpenDiffering    = "open_windows_differing"
	MetricRowsUnreadable   = "sink_rows_unreadable"
)

// MetricNames lists the metrics in the order summaries show them.
var MetricNames = []string{
	MetricWindowsCompared, MetricWindowsDiffering, MetricWindowsDiffering + "_" + ClassTooLate,
	MetricWindowsDiffering + "_" + ClassMissingWindow, MetricWindowsDiffering + "_" + ClassUnexplained,
	MetricWindowsMaterial, MetricDeltaMicrosAbs, MetricDeltaCountAbs, MetricOpenCompared, MetricOpenDiffering,
	MetricRowsUnreadable,
}

// Metrics returns the figures by metric name, zeros included: what CompareWithSink counts, and the
// summary's fallback when the runner reports no counters.
func (c Comparison) Metrics() map[string]int64 {
	m := make(map[string]int64, len(MetricNames))
	for _, n := range MetricNames {
		m[n] = 0
	}
	m[MetricWindowsCompared] = int64(c.Checked)
	m[MetricWindowsDiffering] = int64(len(c.Diffs))
	for _, d := range c.Diffs {
		m[MetricWindowsDiffering+"_"+d.Classification]++
		if d.Material {
			m[MetricWindowsMaterial]++
		}
		m[MetricDeltaMicrosAbs] += abs(d.DeltaMicros())
		m[MetricDeltaCountAbs] += abs(d.DeltaCount())
	}
	m[MetricOpenCompared] = int64(c.OpenChecked)
	m[MetricOpenDiffering] = int64(len(c.Open))
	m[MetricRowsUnreadable] = int64(len(c.Unreadable))
	return m
}

// CompareInput is what Compare needs: the comparison step's settings (its Sink unused), the
// totals and what the step read of the sink.
type CompareInput struct {
	CompareSettings
	// Recomputed is the raw log's total per key (Result.Totals).
	Recomputed map[Key]Totals
	// Rows are the sink's current rows (Compare selects); Unreadable's keys are not compared.
	Rows       []model.Row
	Unreadable []Unreadable
	// FinalHorizon is the latest window_end of a FINAL row (HasHorizon: there is one).
	FinalHorizon int64
	HasHorizon   bool
	// Corrected holds the keys whose latest changelog row is a reconcile correction, with the
	// stream's last row before it: a difference there that the current row does not explain is
	// classified against the stream's row too, since the correction may already hold the too-late
	// events known when it was written (SPEC §6: a correction already applied).
	Corrected map[Key]Corrected
}

// Corrected is a key's latest correction and the stream's last row before it.
type Corrected struct {
	// Revision is the correction's revision.
	Revision int64
	// Stream is the stream's last row below it (HasStream false: the stream wrote none).
	Stream    model.Row
	HasStream bool
}

// corrections returns the keys whose latest changelog entry a reconcile run wrote; a key's
// entries come in revision order.
func corrections(entries []sink.ChangelogEntry) map[Key]Corrected {
	out := map[Key]Corrected{}
	for _, e := range entries {
		k := Key{e.Row.WindowStart, e.Row.Dims}
		c := out[k]
		if e.Row.ByReconcile() {
			c.Revision = e.Row.Revision
		} else {
			c = Corrected{Stream: e.Row, HasStream: true} // a stream row after a correction ends it
		}
		out[k] = c
	}
	maps.DeleteFunc(out, func(_ Key, c Corrected) bool { return c.Revision == 0 })
	return out
}

// closed says the stream has closed a window: a FINAL row ending at H closes every window ending by
// H. The raw log cannot tell (the stream may lag it).
func (in CompareInput) closed(start int64) bool {
	return in.HasHorizon && in.Triggers.WindowEnd(start) <= in.FinalHorizon
}

// Compare diffs recomputed totals against the sink's rows (SPEC §6): keys in the range, else every
// key of a window in the raw log.
func Compare(in CompareInput) Comparison {
	present := map[int64]bool{}
	for k, t := range in.Recomputed {
		present[k.WindowStart] = present[k.WindowStart] || t.Count > 0 // not by future events only
	}
	inScope := func(start int64) bool { return in.Range.Contains(start) && (present[start] || !in.Range.All()) }
	keys := map[Key]bool{}
	for k, t := range in.Recomputed {
		keys[k] = inScope(k.WindowStart) && t.Count > 0
	}
	rows := map[Key]model.Row{}
	for _, r := range in.Rows {
		if k := (Key{r.WindowStart, r.Dims}); inScope(r.WindowStart) {
			rows[k], keys[k] = r, true
		}
	}

	var c Comparison
	skip := map[Key]bool{}
	for _, u := range in.Unreadable {
		if t, err := time.Parse(time.RFC3339Nano, u.WindowStart); err == nil {
			start := t.UnixMilli()
			if !inScope(start) {
				continue // outside the range checked
			}
			skip[Key{start, u.Dims}] = true
		}
		c.Unreadable = append(c.Unreadable, u)
	}
	for _, k := range slices.SortedFunc(maps.Keys(keys), compareKeys) {
		if !keys[k] || skip[k] {
			continue // out of scope, or reported as unreadable: its stored total is unknown
		}
		row, has := rows[k]
		d := Diff{Key: k, Streamed: row, HasRow: has, Recomputed: in.Recomputed[k], InLog: present[k.WindowStart]}
		same := has && d.DeltaCount() == 0 && d.DeltaMicros() == 0
		open := (has && row.State != model.Final) || (!has && !in.closed(k.WindowStart))
		if open {
			c.OpenChecked++
			if !same {
				c.Open = append(c.Open, d)
			}
			continue
		}
		c.Checked++
		if same {
			continue
		}
		if d.futureCounted() {
			c.FutureCounted++
			continue
		}
		d.Classification = classify(d)
		if cr, ok := in.Corrected[k]; ok && has && cr.Revision == row.Revision && d.Classification == ClassUnexplained {
			// The correction may hold too-late events already: explain against the stream's row.
			explain := d
			explain.Streamed, explain.HasRow = cr.Stream, cr.HasStream
			d.Classification = classify(explain)
		}
		d.Material = d.DeltaCount() != 0 || abs(d.DeltaMicros()) > in.ToleranceMicros
		c.Diffs = append(c.Diffs, d)
	}
	return c
}

// classify names why a closed key differs (SPEC §6: explained when the audit tables say why).
func classify(d Diff) string {
	r := d.Recomputed
	if !d.HasRow {
		if r.TooLateCount == r.Count && r.Count > 0 {
			return ClassMissingWindow
		}
		return ClassUnexplained
	}
	if d.Streamed.EventCount+r.TooLateCount == r.Count &&
		d.Streamed.RevenueMicros+r.TooLateRevenueMicros == r.RevenueMicros && r.TooLateCount > 0 {
		return ClassTooLate
	}
	return ClassUnexplained
}

// futureCounted says the row is larger by exactly some of Recomputed.Future: events the stream
// quarantined as future_event_time and a restart counted once their time had come. That is a
// verdict of the stream's rules at another processing time, so the row agrees with the log.
func (d Diff) futureCounted() bool {
	r, budget := d.Recomputed, 1<<20 // subsets tried; beyond, a human looks
	n := d.Streamed.EventCount - r.Count
	return d.HasRow && n > 0 && r.TooLateCount == 0 && sumsTo(r.Future, n, d.Streamed.RevenueMicros-r.RevenueMicros, &budget)
}

// sumsTo says whether some n of amounts sum to exactly sum.
func sumsTo(amounts []int64, n, sum int64, budget *int) bool {
	if n == 0 || int64(len(amounts)) < n || *budget <= 0 {
		return n == 0 && sum == 0
	}
	*budget--
	return sumsTo(amounts[1:], n-1, sum-amounts[0], budget) || sumsTo(amounts[1:], n, sum, budget)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func init() {
	register.DoFn4x1[context.Context, []byte, func(*string, *Totals) bool, func(Comparison), error](&compareFn{})
	register.Iter2[string, Totals]()
	register.Emitter1[Comparison]()
}

// MetricWindowDeltaMicros is a Beam distribution in Namespace: |delta_micros| per differing key.
const MetricWindowDeltaMicros = "window_delta_micros_abs"

// CompareSettings are the comparison step's serialised configuration.
type CompareSettings struct {
	// Sink is opened by the step on the worker, so it must be reachable from there.
	Sink  sink.Spec
	Range Range
	// Triggers gives the window size and allowed lateness.
	Triggers triggers.Policy
	// ToleranceMicros is --tolerance.
	ToleranceMicros int64
}

// CompareWithSink is the pipeline's last step: once totals are complete it reads the sink, runs
// Compare, counts Comparison.Metrics and MetricWindowDeltaMicros, and returns the Comparison.
// The totals are a side input of a step driven by one Impulse: it runs exactly once, even with no
// totals, where a global Combine would produce nothing. One DoFn call increments every counter
// once, so concurrent bundles cannot lose updates (internal/localrunner/metricgate.go).
func CompareWithSink(s beam.Scope, totals beam.PCollection, set CompareSettings) beam.PCollection {
	s = s.Scope("CompareWithSink")
	return beam.ParDo(s, &compareFn{CompareSettings: set}, beam.Impulse(s), beam.SideInput{Input: totals})
}

// compareFn is CompareWithSink's DoFn.
type compareFn struct {
	CompareSettings

	counters map[string]beam.Counter
	deltas   beam.Distribution
}

func (f *compareFn) Setup() {
	f.counters = make(map[string]beam.Counter, len(MetricNames))
	for _, n := range MetricNames {
		f.counters[n] = beam.NewCounter(Namespace, n)
	}
	f.deltas = beam.NewDistribution(Namespace, MetricWindowDeltaMicros)
}

func (f *compareFn) ProcessElement(ctx context.Context, _ []byte, totals func(*string, *Totals) bool, emit func(Comparison)) error {
	all, err := readTotals(totals)
	if err != nil {
		return fmt.Errorf("reconcile: compare: %w", err)
	}
	recomputed := make(map[Key]Totals, len(all))
	for _, kt := range all {
		if _, dup := recomputed[kt.Key]; dup {
			return fmt.Errorf("reconcile: compare: key %s twice in the totals", kt.Key)
		}
		recomputed[kt.Key] = kt.Totals
	}

	in, err := f.readSink(ctx)
	if err != nil {
		return err
	}
	in.Recomputed = recomputed
	c := Compare(in)

	for n, v := range c.Metrics() {
		f.counters[n].Inc(ctx, v)
	}
	for _, d := range c.Diffs {
		f.deltas.Update(ctx, abs(d.DeltaMicros()))
	}
	emit(c)
	return nil
}

// readSink reads the sink's current rows and final horizon, and its changelog: the history a
// correction builds on.
func (f *compareFn) readSink(ctx context.Context) (CompareInput, error) {
	r, ok, err := sink.OpenReader(ctx, f.Sink)
	if err != nil {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: %w", f.Sink, err)
	}
	if !ok {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: not readable from the worker (no such file?)", f.Sink)
	}
	defer r.Close()
	// A row any of these reads cannot read is reported once and counted as unexplained, its key not
	// compared (SPEC §6: a corrupt amount, a broken changelog); the others are compared.
	rows, errRows := sink.Rows(r.Changelog(ctx, sink.Query{Current: true}))
	horizon, hasHorizon, errHorizon := r.FinalHorizon(ctx)
	// The changelog of the windows in the range.
	var q sink.Query
	if f.Range.HasFrom {
		q.From = &f.Range.From
	}
	log, errChangelog := r.Changelog(ctx, q)
	var unreadable []Unreadable
	seen := map[Unreadable]bool{}
	for _, err := range []error{errRows, errHorizon, errChangelog} {
		bad, ok := sink.Unreadable(err)
		if !ok {
			return CompareInput{}, fmt.Errorf("reconcile: compare: %w", err)
		}
		for _, e := range bad {
			u := Unreadable{Table: e.Table, WindowStart: e.WindowStart, Dims: e.Dims, Column: e.Column, Reason: e.Err.Error()}
			if !seen[u] {
				seen[u] = true
				unreadable = append(unreadable, u)
			}
		}
	}
	return CompareInput{CompareSettings: f.CompareSettings, Rows: rows, Unreadable: unreadable,
		FinalHorizon: horizon, HasHorizon: hasHorizon, Corrected: corrections(log)}, nil
}
