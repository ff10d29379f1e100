package reconcile

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn4x1[context.Context, []byte, func(*string, *Totals) bool, func(Comparison), error](&compareFn{})
	register.Iter2[string, Totals]()
	register.Emitter1[Comparison]()
}

// MetricWindowDeltaMicros is a Beam distribution in Namespace: one update of
// |delta_micros| per differing closed key (Comparison.Diffs), so its count is
// windows_differing, its sum delta_micros_abs, and its max the largest
// single revenue difference.
const MetricWindowDeltaMicros = "window_delta_micros_abs"

// CompareSettings are what the comparison step needs besides the totals:
// the sink to read and CompareInput's settings. They are the DoFn's
// serialised configuration, so every field is plain data.
type CompareSettings struct {
	// Sink is the sink whose current rows are compared; the step opens it
	// itself, on the worker, so it must be reachable from there (as
	// --source is).
	Sink            sink.Spec
	Range           Range
	Triggers        triggers.Policy
	ToleranceMicros int64
}

// CompareWithSink is the pipeline's last step: once totals
// (PCollection<KV<string, Totals>>, Recompute's) are complete, it reads the
// sink's current rows and final horizon, runs Compare, increments the
// comparison's Beam counters (Comparison.Metrics' names, in Namespace) and
// the MetricWindowDeltaMicros distribution, and returns the Comparison as a
// single element.
//
// The totals arrive as a side input of a step driven by one Impulse
// element: a side input is complete before the step runs, and the step runs
// exactly once even when there are no totals at all (an explicit range over
// a raw log without valid events still checks the sink's rows), where a
// global Combine would produce nothing. The sink is read inside the step,
// after the recomputation, as late as possible: a window the stream
// finalised meanwhile is compared as FINAL. One DoFn call in one bundle
// increments every counter once, so concurrent bundles cannot lose updates
// (see internal/localrunner/metricgate.go for prism's defect with those).
func CompareWithSink(s beam.Scope, totals beam.PCollection, set CompareSettings) beam.PCollection {
	s = s.Scope("CompareWithSink")
	return beam.ParDo(s, &compareFn{
		Sink:            set.Sink,
		Range:           set.Range,
		Triggers:        set.Triggers,
		ToleranceMicros: set.ToleranceMicros,
	}, beam.Impulse(s), beam.SideInput{Input: totals})
}

// compareFn is CompareWithSink's DoFn.
type compareFn struct {
	Sink            sink.Spec
	Range           Range
	Triggers        triggers.Policy
	ToleranceMicros int64

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
	recomputed := map[Key]Totals{}
	var (
		wk string
		t  Totals
	)
	for totals(&wk, &t) {
		start, dims, err := transforms.ParseWindowKey(wk)
		if err != nil {
			return fmt.Errorf("reconcile: compare: %w", err)
		}
		k := Key{WindowStart: start, Dims: dims}
		if _, dup := recomputed[k]; dup {
			return fmt.Errorf("reconcile: compare: key %s twice in the totals", k)
		}
		recomputed[k] = t
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

// readSink opens the sink and reads what Compare needs of it: the current
// rows and the final horizon.
func (f *compareFn) readSink(ctx context.Context) (CompareInput, error) {
	r, ok, err := sinks.OpenReader(ctx, f.Sink)
	if err != nil {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: %w", f.Sink, err)
	}
	if !ok {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: not readable from the worker (no such file?)", f.Sink)
	}
	defer r.Close()
	// A row that cannot be read is left out of the comparison and reported
	// (SPEC §6: one line naming the table, window and column, counted as
	// unexplained); the others are compared.
	rows, err := r.CurrentRows(ctx)
	bad, ok := sinks.Unreadable(err)
	if !ok {
		return CompareInput{}, fmt.Errorf("reconcile: compare: %w", err)
	}
	horizon, hasHorizon, err := r.FinalHorizon(ctx)
	if err != nil {
		return CompareInput{}, fmt.Errorf("reconcile: compare: %w", err)
	}
	var unreadable []Unreadable
	for _, e := range bad {
		unreadable = append(unreadable, Unreadable{Table: e.Table, WindowStart: e.WindowStart, Dims: e.Dims, Column: e.Column,
			Reason: e.Err.Error()})
	}
	return CompareInput{
		Rows:            rows,
		Unreadable:      unreadable,
		Range:           f.Range,
		Triggers:        f.Triggers,
		FinalHorizon:    horizon,
		HasHorizon:      hasHorizon,
		ToleranceMicros: f.ToleranceMicros,
	}, nil
}
