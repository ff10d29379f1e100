package launch

import (
	"fmt"
	"maps"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/transforms"
)

// Counts are a run's figures: pipeline.Counts, with the sink's.
type Counts = pipeline.Counts

// counter is one user counter's value, summed across steps.
type counter struct {
	namespace, name string
	value           int64
}

// countersOf lists a job's counters. Result() is the committed value where
// the runner reports one, else the attempted value.
func countersOf(m metrics.Results) []counter {
	var out []counter
	for _, r := range m.AllMetrics().Counters() {
		out = append(out, counter{namespace: r.Namespace(), name: r.Name(), value: r.Result()})
	}
	return out
}

// countsOf sums the counters of the revenue namespace by name.
func countsOf(counters []counter) Counts {
	named := map[string]int64{}
	for _, r := range counters {
		if r.namespace == transforms.Namespace {
			named[r.name] += r.value
		}
	}
	c := pipeline.CountsOf(named)
	c.SinkAccepted = named[sinks.MetricRowsAccepted]
	c.SinkStale = named[sinks.MetricRowsStale]
	c.SinkAudit = named[sinks.MetricAuditInserted]
	c.SinkRetries = named[sinks.MetricRetries]
	return c
}

// diffCounts lists the figures in which two Counts differ.
func diffCounts(a, b Counts) []string {
	var d []string
	cmp := func(name string, x, y int64) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %d vs %d", name, x, y))
		}
	}
	cmp("read", a.Read, b.Read)
	cmp("counted", a.Counted, b.Counted)
	cmp("duplicates", a.Duplicates, b.Duplicates)
	cmp("conflicts", a.Conflicts, b.Conflicts)
	cmp("quarantined", a.Quarantined, b.Quarantined)
	cmp("too_late", a.TooLate, b.TooLate)
	cmp("invariant_data_after_final", a.AfterFinal, b.AfterFinal)
	cmp("sink_rows_accepted", a.SinkAccepted, b.SinkAccepted)
	cmp("sink_rows_stale", a.SinkStale, b.SinkStale)
	cmp("sink_audit_inserted", a.SinkAudit, b.SinkAudit)
	cmp("sink_retries", a.SinkRetries, b.SinkRetries)
	for _, h := range []struct {
		metric string
		x, y   []int64
	}{{transforms.MetricLateness, a.Lateness.Counts(), b.Lateness.Counts()}, {transforms.MetricArrival, a.Arrival.Counts(), b.Arrival.Counts()}} {
		for i := range delay.Buckets {
			cmp(delay.CounterName(h.metric, i), at(h.x, i), at(h.y, i))
		}
	}
	for _, m := range []struct {
		prefix string
		x, y   map[string]int64
	}{{"quarantined_", a.QuarantinedBy, b.QuarantinedBy}, {"read_partition_", a.ReadBy, b.ReadBy}, {"rows_", a.Rows, b.Rows}} {
		keys := map[string]bool{}
		for k := range m.x {
			keys[k] = true
		}
		for k := range m.y {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			cmp(m.prefix+k, m.x[k], m.y[k])
		}
	}
	return d
}

// at is xs[i], 0 past its end (a Counts built by hand has no buckets).
func at(xs []int64, i int) int64 {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}
