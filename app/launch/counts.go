package launch

import (
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// reading is one read of a job's counters, with what it can prove.
type reading struct {
	metrics.Counts
	// committed: the runner's committed values (finished bundles), not
	// attempted ones (in-flight and retried; zero where none reported).
	committed bool
	// reported: the runner reported at least one counter.
	reported bool
}

func readingOf(m beammetrics.Results) reading {
	c, committed, reported := metrics.Committed(m)
	return reading{Counts: c, committed: committed, reported: reported}
}

// proves reports whether the reading proves every record read so far has its
// verdict: committed counters that saw records (zero is what a runner without
// live metrics shows), all of them judged.
func (r reading) proves() bool {
	return r.committed && r.Read > 0 && r.Read == r.Verdicts()
}
