package launch

import (
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// reading is one read of a job's counters, with what it can prove.
type reading struct {
	metrics.Counts
	// committed: the runner's committed values, not attempted ones; reported: any counter at all.
	committed, reported bool
}

func readingOf(m beammetrics.Results) reading {
	c, committed, reported := metrics.Committed(m)
	return reading{Counts: c, committed: committed, reported: reported}
}

// proves reports whether committed counters saw records (a runner without live metrics shows
// zero), all judged.
func (r reading) proves() bool {
	return r.committed && r.Read > 0 && r.Read == r.Verdicts()
}
