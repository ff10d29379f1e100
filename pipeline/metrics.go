package pipeline

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// Counts are a run's figures (metrics.Counts).
type Counts = metrics.Counts

// CountsFrom reads a run's committed Counts (metrics.CountsFrom).
func CountsFrom(pr beam.PipelineResult) Counts { return metrics.CountsFrom(pr) }
