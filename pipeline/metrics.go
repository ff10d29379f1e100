package pipeline

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// Counts are the conservation figures of SPEC §4 for one run, and what the
// sink made of its rows; package internal/metrics owns the names and the
// parsing.
type Counts = metrics.Counts

// CountsFrom reads a run's Counts from the result of a pipeline Build made.
func CountsFrom(pr beam.PipelineResult) Counts { return metrics.CountsFrom(pr) }
