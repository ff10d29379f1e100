package transforms

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn7x1[context.Context, beam.EventTime, state.Provider, timers.Provider, string, model.Delta, func(string, model.Delta), error](&earlyTickFn{})
	register.Emitter2[string, model.Delta]()
}

// EarlyTicks emits one tick per key at most every p.Early of processing time,
// after the key received data: the EARLY refresh of SPEC §4. It lives in its
// own DoFn because prism hangs a DoFn that declares timers in both time
// domains; the revision step turns a tick into an EARLY row only when the
// snapshot changed since the last row.
func EarlyTicks(s beam.Scope, deltas beam.PCollection, p triggers.Policy) beam.PCollection {
	s = s.Scope("EarlyTicks")
	return beam.ParDo(s, &earlyTickFn{
		Policy:  p,
		Armed:   state.MakeValueState[bool]("armed"),
		Refresh: timers.InProcessingTime("early"),
	}, deltas)
}

type earlyTickFn struct {
	Policy triggers.Policy

	Armed   state.Value[bool]
	Refresh timers.ProcessingTime
}

func (f *earlyTickFn) ProcessElement(_ context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, _ model.Delta, _ func(string, model.Delta)) error {
	armed, _, err := f.Armed.Read(sp)
	if err != nil {
		return fmt.Errorf("early ticks: read state: %w", err)
	}
	if armed {
		return nil
	}
	// The tick carries (and holds the watermark at) the timestamp of the
	// data that armed it, as Beam does for processing-time timers: the
	// revision step sees it before the watermark can pass that data, so an
	// EARLY row is never overtaken by ON_TIME. The price is that ON_TIME
	// waits for a pending tick, at most --early. (A later hold would not
	// delay ON_TIME, but prism runs a stateful stage's element only once
	// the watermark reaches its timestamp, so the tick would arrive late.)
	f.Refresh.Set(tp, time.Now().Add(f.Policy.Early), timers.WithOutputTimestamp(ts.ToTime()))
	return f.Armed.Write(sp, true)
}

func (f *earlyTickFn) OnTimer(_ context.Context, sp state.Provider, _ timers.Provider, key string, _ timers.Context, emit func(string, model.Delta)) error {
	emit(key, model.Delta{Tick: true})
	return f.Armed.Clear(sp)
}
