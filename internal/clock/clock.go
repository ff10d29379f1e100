// Package clock is the job's processing-time clock: ticks from a periodic
// impulse, because processing-time timers are not portable (Flink's portable
// runner does not fire them for Go: Beam filters TestTimers_ProcessingTime.*).
package clock

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

// horizon is how far the ticks run: the end of time would overflow the
// impulse's time.Duration arithmetic.
const horizon = 100 * 365 * 24 * time.Hour

// Ticks emits an element ([]byte) every interval from now on, stamped with
// its processing time. It never ends: a bounded job must not use it.
func Ticks(s beam.Scope, every time.Duration) beam.PCollection {
	start := time.Now()
	return periodic.Impulse(s.Scope("Clock"), start, start.Add(horizon), every, false)
}
