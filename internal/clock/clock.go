// Package clock is the job's processing-time clock: ticks from a periodic
// impulse, a splittable source every runner runs like any other. The job
// uses it wherever it acts on the passing of time rather than on data (the
// EARLY refresh, the BigQuery flush, the discovery of new partitions),
// because processing-time timers are not portable: the portable Flink
// runner does not fire them for the Go SDK (Beam's integration suite
// filters TestTimers_ProcessingTime.* on Flink, sdks/go/test/integration/
// integration.go).
package clock

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

// horizon is how far the ticks run: far away rather than the end of time,
// whose distance from now overflows a time.Duration in the impulse's
// restriction arithmetic.
const horizon = 100 * 365 * 24 * time.Hour

// Ticks emits an element ([]byte) every interval from now on, stamped with
// its processing time. The source never ends by itself: a bounded job must
// not use it, and a streaming job ends at its stop (drain or cancel).
func Ticks(s beam.Scope, every time.Duration) beam.PCollection {
	start := time.Now()
	return periodic.Impulse(s.Scope("Clock"), start, start.Add(horizon), every, false)
}
