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
	register.DoFn3x0[string, model.Delta, func(int, string)](&dirtyMarkFn{})
	register.DoFn2x0[[]byte, func(int, string)](&tickFanFn{})
	register.DoFn6x1[context.Context, beam.EventTime, state.Provider, int, string, func(beam.EventTime, string, model.Delta), error](&dirtyKeysFn{})
	register.Emitter2[int, string]()
	register.Emitter3[beam.EventTime, string, model.Delta]()
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

// EarlyTicksFrom is the EARLY refresh without processing-time timers, for
// runners that do not fire them for the Go SDK: Beam's Go integration suite
// filters TestTimers_ProcessingTime.* on the portable Flink runner ("Flink
// doesn't support processing time timers", sdks/go/test/integration/
// integration.go). Each element of ticks (periodic.Impulse every --early)
// asks for one tick to every revision key that got data since the last
// tick; buckets stateful keys remember the dirty keys in a bag. An EARLY
// row follows its data by at most one tick period, as with the timer.
//
// A tick is stamped with the earliest event time among the bucket's dirty
// keys, not the clock's: stamped far ahead (a replay), a runner delivering
// a key's elements and timers in timestamp order would hold it behind the
// ON_TIME timer and no EARLY row would come. A tick after ON_TIME writes
// nothing (triggers.WindowState.Tick).
func EarlyTicksFrom(s beam.Scope, deltas, ticks beam.PCollection, buckets int) beam.PCollection {
	s = s.Scope("EarlyTicksFrom")
	marks := beam.ParDo(s, &dirtyMarkFn{Buckets: buckets}, deltas)
	fan := beam.ParDo(s, &tickFanFn{Buckets: buckets}, ticks)
	return beam.ParDo(s, &dirtyKeysFn{
		Dirty: state.MakeBagState[string]("dirty"),
		Since: state.MakeValueState[int64]("since"),
	}, beam.Flatten(s, marks, fan))
}

// dirtyMarkFn names the revision key a delta touched, in its bucket.
type dirtyMarkFn struct{ Buckets int }

func (f *dirtyMarkFn) ProcessElement(key string, d model.Delta, emit func(int, string)) {
	if !d.Tick {
		emit(ShardOf(key, f.Buckets), key)
	}
}

// tickFanFn sends a tick (the empty key) to every bucket.
type tickFanFn struct{ Buckets int }

func (f *tickFanFn) ProcessElement(_ []byte, emit func(int, string)) {
	for b := 0; b < f.Buckets; b++ {
		emit(b, "")
	}
}

// dirtyKeysFn remembers a bucket's dirty keys and the earliest event time
// that dirtied one and, on a tick, emits a tick to each key once, stamped
// with that time, and forgets them.
type dirtyKeysFn struct {
	Dirty state.Bag[string]
	Since state.Value[int64] // earliest mark's event time, ms
}

func (f *dirtyKeysFn) ProcessElement(_ context.Context, ts beam.EventTime, sp state.Provider, _ int, key string, emit func(beam.EventTime, string, model.Delta)) error {
	since, dirty, err := f.Since.Read(sp)
	if err != nil {
		return fmt.Errorf("early ticks: read state: %w", err)
	}
	if key != "" {
		if !dirty || int64(ts) < since {
			if err := f.Since.Write(sp, int64(ts)); err != nil {
				return fmt.Errorf("early ticks: write state: %w", err)
			}
		}
		return f.Dirty.Add(sp, key)
	}
	if !dirty {
		return nil
	}
	keys, _, err := f.Dirty.Read(sp)
	if err != nil {
		return fmt.Errorf("early ticks: read dirty keys: %w", err)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			emit(beam.EventTime(since), k, model.Delta{Tick: true})
		}
	}
	if err := f.Since.Clear(sp); err != nil {
		return fmt.Errorf("early ticks: clear state: %w", err)
	}
	return f.Dirty.Clear(sp)
}
