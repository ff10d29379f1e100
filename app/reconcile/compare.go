package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

// Classifications of reconcile_diffs (SPEC §5).
const (
	// ClassTooLate: the FINAL row is short by exactly the events the stream
	// judged too late (too_late_events): the designed gap, now filled.
	ClassTooLate = "too_late"
	// ClassMissingWindow: the raw log has events for a closed window the
	// sink has no row for, and the stream judged every one of them too late
	// (too_late_events): a window the stream never opened. A missing row
	// with events the stream counted is unexplained (a lost row).
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
	// Streamed is the sink's current row; zero with HasRow false when the
	// sink has no row for the key.
	Streamed model.Row
	HasRow   bool
	// Recomputed is the raw log's total for the key.
	Recomputed Totals
	// Classification is one of the Class* constants; empty for an open
	// window, which is not classified.
	Classification string
	// Material: a count difference, or a revenue difference above the
	// tolerance. Only material differences are applied.
	Material bool
	// InLog says the raw log has events for the window (any dims). A
	// material diff of a window it has none for is held back from --apply:
	// emptying a whole window because the raw log lacks it (a trimmed log,
	// a wrong --source) would destroy the stream's result, not correct it.
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
	// Checked counts the closed window keys compared: FINAL rows and
	// missing windows. Open keys are counted apart.
	Checked int
	// Diffs are the closed keys that differ, ordered by key. Every one is
	// written to reconcile_diffs; the material ones are applied (see
	// Diff.Applicable).
	Diffs []Diff
	// OpenChecked counts keys the stream may still change: a row not yet
	// FINAL, or no row for a window it has not closed yet. Open lists those
	// that differ. They are reported but never written, applied or
	// material: the stream's own LATE and FINAL rows will correct them, and
	// a reconcile revision would collide with the stream's next one.
	OpenChecked int
	Open        []Diff
	// Unreadable lists the sink rows that could not be read (a corrupt
	// amount, an unknown state): their keys are not compared, and each
	// counts as unexplained (SPEC §6).
	Unreadable []Unreadable
}

// Unreadable is a sink row that could not be read, named by table, window,
// dims and column.
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
	var out []Diff
	for _, d := range c.Diffs {
		if d.Material && !d.InLog {
			out = append(out, d)
		}
	}
	return out
}

// Unexplained returns the material diffs no audit table accounts for, and
// those --apply holds back (see Diff.InLog): a human must look at them.
func (c Comparison) Unexplained() []Diff {
	var out []Diff
	for _, d := range c.Diffs {
		if d.Material && (d.Classification == ClassUnexplained || !d.InLog) {
			out = append(out, d)
		}
	}
	return out
}

// Material returns the material diffs.
func (c Comparison) Material() []Diff {
	var out []Diff
	for _, d := range c.Diffs {
		if d.Material {
			out = append(out, d)
		}
	}
	return out
}

// Metrics of a comparison: Beam counters in Namespace, incremented by the
// pipeline's comparison step (SPEC §6's summary figures; see
// Comparison.Metrics).
const (
	// MetricWindowsCompared counts the closed keys compared (Checked).
	MetricWindowsCompared = "windows_compared"
	// MetricWindowsDiffering counts the closed keys that differ, and
	// MetricWindowsDiffering + "_" + a classification those of each class.
	MetricWindowsDiffering = "windows_differing"
	// MetricWindowsMaterial counts the material differences.
	MetricWindowsMaterial = "windows_material"
	// MetricDeltaMicrosAbs sums |delta_micros| over the differing closed
	// keys, MetricDeltaCountAbs |recomputed_count - streamed_count|: a gain
	// in one window does not hide a loss in another.
	MetricDeltaMicrosAbs = "delta_micros_abs"
	MetricDeltaCountAbs  = "delta_count_abs"
	// MetricOpenCompared and MetricOpenDiffering count the open keys
	// (reported only).
	MetricOpenCompared  = "open_windows_compared"
	MetricOpenDiffering = "open_windows_differing"
	// MetricRowsUnreadable counts the sink rows in scope that could not be
	// read (Comparison.Unreadable).
	MetricRowsUnreadable = "sink_rows_unreadable"
)

// Classes lists the classifications in SPEC §5's order.
var Classes = []string{ClassTooLate, ClassMissingWindow, ClassUnexplained}

// MetricNames lists the comparison's metrics in the order summaries show
// them.
var MetricNames = []string{
	MetricWindowsCompared, MetricWindowsDiffering,
	MetricWindowsDiffering + "_" + ClassTooLate, MetricWindowsDiffering + "_" + ClassMissingWindow,
	MetricWindowsDiffering + "_" + ClassUnexplained,
	MetricWindowsMaterial, MetricDeltaMicrosAbs, MetricDeltaCountAbs, MetricOpenCompared, MetricOpenDiffering,
	MetricRowsUnreadable,
}

// Metrics returns the comparison's figures by metric name (every one of
// MetricNames, zeros included). The pipeline's comparison step
// (CompareWithSink) increments a Beam counter in Namespace by each of them;
// the summary and the report show those counters as the runner reports
// them (Outcome.Counters), and these figures only when it reports none.
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

// CompareInput is what Compare needs besides the totals.
type CompareInput struct {
	// Recomputed is the raw log's total per key (Result.Totals).
	Recomputed map[Key]Totals
	// Rows are the sink's current rows (any range; Compare selects), and
	// Unreadable those that could not be read: their keys are not
	// compared.
	Rows       []model.Row
	Unreadable []Unreadable
	Range      Range
	// Triggers gives the window size and allowed lateness.
	Triggers triggers.Policy
	// FinalHorizon is the latest window_end of a FINAL row in the sink
	// (HasHorizon false when there is none).
	FinalHorizon int64
	HasHorizon   bool
	// ToleranceMicros is --tolerance.
	ToleranceMicros int64
}

// closed says whether the stream has closed a window, so that a missing row
// is a loss rather than a row still to come. The stream says so itself: a
// FINAL row for a window ending at H means its watermark passed
// H + allowed lateness, which closes every window ending by H. The raw log
// cannot say it: the stream may not have read the newest files yet, and a
// correction written for a window it still has open would collide with its
// next revisions.
func (in CompareInput) closed(start int64) bool {
	return in.HasHorizon && in.Triggers.WindowEnd(start) <= in.FinalHorizon
}

// Compare diffs recomputed totals against the sink's rows (SPEC §6).
//
// Scope: with an explicit range, every key whose window_start is in it, on
// either side; by default, every key of a window present in the raw log
// (its sink rows included, whatever their dims). Sink rows of windows absent
// from the raw log are not checked by default: a raw log is often kept for
// less time than the table, and its absence proves nothing.
func Compare(in CompareInput) Comparison {
	present := map[int64]bool{}
	for k := range in.Recomputed {
		present[k.WindowStart] = true
	}
	inScope := func(start int64) bool {
		if in.Range.All() {
			return present[start]
		}
		return in.Range.Contains(start)
	}
	rows := map[Key]model.Row{}
	for _, r := range in.Rows {
		if inScope(r.WindowStart) {
			rows[Key{r.WindowStart, r.Dims}] = r
		}
	}
	keys := map[Key]bool{}
	for k := range in.Recomputed {
		if inScope(k.WindowStart) {
			keys[k] = true
		}
	}
	for k := range rows {
		keys[k] = true
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
		if skip[k] {
			continue // reported as unreadable: its stored total is unknown
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
		d.Classification = classify(d)
		d.Material = d.DeltaCount() != 0 || abs(d.DeltaMicros()) > in.ToleranceMicros
		c.Diffs = append(c.Diffs, d)
	}
	return c
}

// classify names why a closed key differs (SPEC §6: explained when the
// audit tables account for it). A missing row whose every event the stream
// judged too late is missing_window: the window itself is what is missing.
// A FINAL row short by exactly the too-late part of the recomputation is
// too_late. Anything else, a lost row included, is unexplained.
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

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
