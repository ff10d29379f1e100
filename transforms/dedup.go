package transforms

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn8x1[context.Context, state.Provider, timers.Provider, int, model.EventBatch,
		func(model.Event), func(model.Conflict), func(model.TooLate), error](&dedupFn{})
	register.Emitter1[model.Conflict]()
}

// DedupOptions configures Dedup.
type DedupOptions struct {
	Policy triggers.Policy
	// Retention is how long (event time, from each event's event_time) an
	// event_id is remembered. It must cover window + allowed lateness.
	Retention int64 // ms
	// Shards is the number of dedup state keys.
	Shards int
	// StartWatermark seeds every shard's knowledge of the pipeline watermark
	// (after a restart: the close time of the latest window the sink holds as
	// FINAL), or model.NoWatermark.
	StartWatermark int64
}

// Validate checks the options against SPEC §2.
func (o DedupOptions) Validate() error {
	min := o.Policy.Window.Milliseconds() + o.Policy.AllowedLateness.Milliseconds()
	if o.Retention < min {
		return fmt.Errorf("--dedup-retention %v is shorter than window + allowed lateness (%v): a retry arriving inside the correction period would be counted twice",
			msDuration(o.Retention), msDuration(min))
	}
	if o.Shards <= 0 {
		return fmt.Errorf("dedup shards must be positive, got %d", o.Shards)
	}
	return nil
}

// Dedup keeps the first copy of every event_id (SPEC §4). Identical copies
// (same payload fingerprint) are dropped and counted; a copy with a different
// fingerprint goes to the conflict output and is never counted.
//
// Before any dedup verdict it applies rule (b) of the too-late gate: a DoFn
// cannot read its watermark, so each shard keeps one event-time timer chained
// along the window boundaries (triggers.Policy.NextBoundary). A fired timer at
// T proves the pipeline watermark reached T; windows whose close time is <= T
// are closed, and windows whose end is <= T take late data. Because that
// timer also holds the shard's output watermark, the revision step downstream
// cannot fire FINAL at T before every event this shard let through is counted.
//
// The counted events carry AfterEnd; conflicts and rule-(b) too-late records
// come out separately.
func Dedup(s beam.Scope, events beam.PCollection, o DedupOptions) (counted, conflicts, tooLate beam.PCollection) {
	s = s.Scope("Dedup")
	if err := o.Validate(); err != nil {
		panic(err) // options are validated by the caller; this is a programming error
	}
	batches := BatchByShard(s, events, o.Shards)
	return beam.ParDo3(s, &dedupFn{
		Policy:         o.Policy,
		RetentionMs:    o.Retention,
		StartWatermark: o.StartWatermark,
		State:          state.MakeValueState[[]byte]("ids"),
		Boundary:       timers.InEventTime("boundary"),
	}, batches)
}

type dedupFn struct {
	Policy         triggers.Policy
	RetentionMs    int64
	StartWatermark int64

	State    state.Value[[]byte]
	Boundary timers.EventTime

	counted, duplicates, conflicts, tooLate beam.Counter
	entries                                 beam.Distribution
}

func (f *dedupFn) Setup() {
	f.counted = beam.NewCounter(Namespace, "counted")
	f.duplicates = beam.NewCounter(Namespace, "duplicates")
	f.conflicts = beam.NewCounter(Namespace, "conflicts")
	f.tooLate = beam.NewCounter(Namespace, "too_late")
	f.entries = beam.NewDistribution(Namespace, "dedup_state_entries")
}

// idEntry is what a shard remembers per event_id (SPEC §4: event_time and
// payload fingerprint).
type idEntry struct {
	eventTime   int64
	fingerprint uint64
}

// shardState is the whole state of one dedup shard, stored as one value.
type shardState struct {
	// known is the largest boundary timer that fired: the pipeline watermark
	// is at least this.
	known int64
	// timerAt is the pending boundary timer, 0 when the chain is stopped.
	timerAt int64
	ids     map[string]idEntry
}

func decodeShard(b []byte, start int64) (*shardState, error) {
	st := &shardState{known: start, ids: map[string]idEntry{}}
	if len(b) == 0 {
		return st, nil
	}
	r := coders.Reader{B: b}
	st.known = max(r.Varint(), start)
	st.timerAt = r.Varint()
	n := r.Uvarint()
	for i := uint64(0); i < n && r.Err == nil; i++ {
		id := r.String()
		st.ids[id] = idEntry{eventTime: r.Varint(), fingerprint: r.Fixed64()}
	}
	if r.Err != nil {
		return nil, fmt.Errorf("dedup: decode shard state: %w", r.Err)
	}
	return st, nil
}

func (st *shardState) encode() []byte {
	w := coders.Writer{B: make([]byte, 0, 16+len(st.ids)*40)}
	w.Varint(st.known)
	w.Varint(st.timerAt)
	w.Uvarint(uint64(len(st.ids)))
	for id, e := range st.ids {
		w.String(id)
		w.Varint(e.eventTime)
		w.Fixed64(e.fingerprint)
	}
	return w.B
}

func (f *dedupFn) load(sp state.Provider) (*shardState, error) {
	b, _, err := f.State.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("dedup: read state: %w", err)
	}
	return decodeShard(b, f.StartWatermark)
}

// armTimer keeps the boundary chain running while the shard remembers ids.
// The chain steps along every boundary after what the shard knows, so its
// knowledge of the watermark stays exact at the instants that matter. A shard
// that knows nothing yet starts just before its earliest event: boundaries
// before that concern none of its events.
func (f *dedupFn) armTimer(tp timers.Provider, st *shardState, base int64) {
	if len(st.ids) == 0 {
		st.timerAt = 0
		return
	}
	if st.timerAt != 0 {
		return
	}
	if st.known != model.NoWatermark {
		base = st.known
	}
	st.timerAt = f.Policy.NextBoundary(base)
	f.Boundary.Set(tp, timeOf(st.timerAt))
}

func (f *dedupFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, batch model.EventBatch,
	emit func(model.Event), conflict func(model.Conflict), late func(model.TooLate)) error {
	st, err := f.load(sp)
	if err != nil {
		return err
	}
	earliest := int64(math.MaxInt64)
	for _, e := range batch.Events {
		earliest = min(earliest, e.EventTime)
		start := f.Policy.WindowStart(e.EventTime)
		// Rule (b): the window's FINAL moment has passed where it is judged.
		if f.Policy.Closed(start, st.known) {
			f.tooLate.Inc(ctx, 1)
			late(TooLateRecord(e))
			continue
		}
		if prev, ok := st.ids[e.EventID]; ok {
			if prev.fingerprint == e.Fingerprint {
				f.duplicates.Inc(ctx, 1)
				continue
			}
			f.conflicts.Inc(ctx, 1)
			conflict(model.Conflict{
				Position:               e.Position,
				EventID:                e.EventID,
				FirstFingerprint:       prev.fingerprint,
				ConflictingFingerprint: e.Fingerprint,
				Payload:                e.Payload,
			})
			continue
		}
		st.ids[e.EventID] = idEntry{eventTime: e.EventTime, fingerprint: e.Fingerprint}
		e.AfterEnd = st.known != model.NoWatermark && f.Policy.WindowEnd(start) <= st.known
		f.counted.Inc(ctx, 1)
		emit(e)
	}
	f.armTimer(tp, st, earliest-1)
	f.entries.Update(ctx, int64(len(st.ids)))
	if err := f.State.Write(sp, st.encode()); err != nil {
		return fmt.Errorf("dedup: write state: %w", err)
	}
	return nil
}

func (f *dedupFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, t timers.Context,
	_ func(model.Event), _ func(model.Conflict), _ func(model.TooLate)) error {
	st, err := f.load(sp)
	if err != nil {
		return err
	}
	if st.timerAt != 0 {
		st.known = max(st.known, st.timerAt)
	}
	st.timerAt = 0
	// Expire ids past their retention: their windows are closed by now, so a
	// later copy is judged too late before dedup ever looks it up.
	for id, e := range st.ids {
		if e.eventTime+f.RetentionMs <= st.known {
			delete(st.ids, id)
		}
	}
	f.armTimer(tp, st, st.known)
	f.entries.Update(ctx, int64(len(st.ids)))
	if len(st.ids) == 0 && st.timerAt == 0 {
		// Keep only the watermark knowledge: a few bytes, not the whole map.
		st.ids = nil
	}
	if err := f.State.Write(sp, st.encode()); err != nil {
		return fmt.Errorf("dedup: write state: %w", err)
	}
	return nil
}
