package transforms

import (
	"context"
	"fmt"
	"slices"
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

// EarlyTicks emits one tick per key at most every p.Early of processing time
// after the key got data (SPEC §4's EARLY refresh). Its own DoFn: prism hangs
// a DoFn with timers in both time domains.
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
	// The tick holds the watermark at the arming data's timestamp, so ON_TIME
	// never overtakes an EARLY row (it waits at most --early for the tick).
	f.Refresh.Set(tp, time.Now().Add(f.Policy.Early), timers.WithOutputTimestamp(ts.ToTime()))
	return f.Armed.Write(sp, true)
}

func (f *earlyTickFn) OnTimer(_ context.Context, sp state.Provider, _ timers.Provider, key string, _ timers.Context, emit func(string, model.Delta)) error {
	emit(key, model.Delta{Tick: true})
	return f.Armed.Clear(sp)
}

// EarlyTicksFrom is the EARLY refresh without processing-time timers (Flink
// fires none for Go): each element of ticks asks for a tick to every revision
// key with data since the last, which buckets stateful keys remember. A tick
// is stamped with the earliest dirty event time, so ON_TIME cannot hold it back.
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

// dirtyKeysFn remembers a bucket's dirty keys and their earliest event time;
// a tick emits one tick per key, stamped with that time, and forgets them.
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
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) { // one tick a key
		emit(beam.EventTime(since), k, model.Delta{Tick: true})
	}
	if err := f.Since.Clear(sp); err != nil {
		return fmt.Errorf("early ticks: clear state: %w", err)
	}
	return f.Dirty.Clear(sp)
}
