package reconcile

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
)

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

// readSink reads the sink's current rows and final horizon.
func (f *compareFn) readSink(ctx context.Context) (CompareInput, error) {
	r, ok, err := sink.OpenReader(ctx, f.Sink)
	if err != nil {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: %w", f.Sink, err)
	}
	if !ok {
		return CompareInput{}, fmt.Errorf("reconcile: compare: --sink %s: not readable from the worker (no such file?)", f.Sink)
	}
	defer r.Close()
	// An unreadable row is reported and counted as unexplained (SPEC §6); the others are compared.
	rows, err := r.CurrentRows(ctx)
	bad, ok := sink.Unreadable(err)
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
	return CompareInput{CompareSettings: f.CompareSettings, Rows: rows, Unreadable: unreadable,
		FinalHorizon: horizon, HasHorizon: hasHorizon}, nil
}
