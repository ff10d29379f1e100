package launch

import (
	"fmt"
	"maps"
	"slices"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/pipeline"
)

// Counts are a run's figures: pipeline.Counts, with the sink's.
type Counts = pipeline.Counts

// counter is one user counter's value, summed across steps.
type counter struct {
	namespace, name string
	value           int64
}

// countersOf lists a job's counters: the committed values (bundles that
// finished) when the runner reports committed metrics, as prism and
// Dataflow batch do, else the attempted ones; committed says which. Not
// Result(), which picks per counter: a counter with nothing committed yet
// would take an in-flight bundle's progress value beside the others'
// committed ones.
func countersOf(m beammetrics.Results) (_ []counter, committed bool) {
	all := m.AllMetrics().Counters()
	for _, r := range all {
		committed = committed || r.Committed != 0
	}
	var out []counter
	for _, r := range all {
		v := r.Attempted
		if committed {
			v = r.Committed
		}
		out = append(out, counter{namespace: r.Namespace(), name: r.Name(), value: v})
	}
	return out, committed
}

// reading is one read of a job's counters, with what it can prove.
type reading struct {
	Counts
	// committed: the figures are the runner's committed values (bundles
	// that finished), not attempted ones, which count in-flight and
	// retried bundles and are all zero where a runner reports none.
	committed bool
	// reported: the runner reported at least one counter.
	reported bool
}

func readingOf(m beammetrics.Results) reading {
	cs, committed := countersOf(m)
	return reading{Counts: countsOf(cs), committed: committed, reported: len(cs) > 0}
}

// proves reports whether the reading proves every record read so far has
// its verdict: committed counters that saw records, all of them judged.
// Zero read and zero verdicts prove nothing: it is what a runner that
// reports no metrics while the job runs (Flink's job server) looks like.
func (r reading) proves() bool {
	return r.committed && r.Read > 0 && r.Read == r.Verdicts()
}

// countsOf sums the counters of the revenue namespace by name.
func countsOf(counters []counter) Counts {
	named := map[string]int64{}
	for _, r := range counters {
		if r.namespace == metrics.Namespace {
			named[r.name] += r.value
		}
	}
	return metrics.CountsOf(named)
}

// diffCounts lists the figures in which two Counts differ.
func diffCounts(a, b Counts) []string {
	var d []string
	cmp := func(name metrics.Name, x, y int64) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %d vs %d", name, x, y))
		}
	}
	cmp(metrics.Read, a.Read, b.Read)
	cmp(metrics.Counted, a.Counted, b.Counted)
	cmp(metrics.Duplicates, a.Duplicates, b.Duplicates)
	cmp(metrics.Conflicts, a.Conflicts, b.Conflicts)
	cmp(metrics.Quarantined, a.Quarantined, b.Quarantined)
	cmp(metrics.TooLate, a.TooLate, b.TooLate)
	cmp(metrics.AfterFinal, a.AfterFinal, b.AfterFinal)
	cmp(metrics.SinkRowsAccepted, a.SinkAccepted, b.SinkAccepted)
	cmp(metrics.SinkRowsStale, a.SinkStale, b.SinkStale)
	cmp(metrics.SinkAuditInserted, a.SinkAudit, b.SinkAudit)
	cmp(metrics.SinkRetries, a.SinkRetries, b.SinkRetries)
	for _, h := range []struct {
		metric metrics.Name
		x, y   []int64
	}{{metrics.Lateness, a.Lateness.Counts(), b.Lateness.Counts()}, {metrics.Arrival, a.Arrival.Counts(), b.Arrival.Counts()}} {
		for i := range delay.Buckets {
			cmp(metrics.Bucket(h.metric, i), at(h.x, i), at(h.y, i))
		}
	}
	for _, m := range []struct {
		name func(string) metrics.Name
		x, y map[string]int64
	}{{metrics.QuarantinedBy, a.QuarantinedBy, b.QuarantinedBy}, {metrics.ReadBy, a.ReadBy, b.ReadBy}, {metrics.RowsBy, a.Rows, b.Rows}} {
		keys := map[string]bool{}
		for k := range m.x {
			keys[k] = true
		}
		for k := range m.y {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			cmp(m.name(k), m.x[k], m.y[k])
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
