package launch

import (
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/pipeline"
)

// Counts are a run's figures: pipeline.Counts, with the sink's.
type Counts = pipeline.Counts

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
	c, committed, reported := metrics.Committed(m)
	return reading{Counts: c, committed: committed, reported: reported}
}

// proves reports whether the reading proves every record read so far has
// its verdict: committed counters that saw records, all of them judged.
// Zero read and zero verdicts prove nothing: it is what a runner that
// reports no metrics while the job runs (Flink's job server) looks like.
func (r reading) proves() bool {
	return r.committed && r.Read > 0 && r.Read == r.Verdicts()
}
