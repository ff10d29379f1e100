package transforms

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn7x1[context.Context, state.Provider, timers.Provider, int, model.EventBatch,
		func(int, model.EventBatch), func(model.TooLate), error](&gateFn{})
}

// GateKeys is how many keys the watermark gate runs on; every key arms every
// window's timers, so the dedup shards need none.
const GateKeys = 8

// WatermarkGate is rule (b) of the too-late gate (SPEC §4): a record whose
// window closed before the pipeline watermark goes to too-late; the others go
// on in the dedup step's batches (one shard and partition each) carrying that
// watermark (model.EventBatch.Watermark: stamp). Most pass still coded, judged
// by the header Admit wrote (Spans, Since).
//
// A DoFn cannot read its watermark, so each key sets event-time timers at the
// end, close and expiry of every window (AnnounceWindows tells every key of
// every window): a timer fired at T proves the watermark reached T.
func WatermarkGate(s beam.Scope, keyed, windows beam.PCollection, o DedupOptions) (batches, tooLate beam.PCollection) {
	s = s.Scope("WatermarkGate")
	announced := AnnounceWindows(s, windows, GateKeys, o.Policy, o.Bound)
	return beam.ParDo2(s, &gateFn{
		keyedStep: newKeyedStep(o), // o.Shards: the dedup step's, which passed records are batched by
		Pending:   state.MakeBagState[[]byte]("pending"),
		Meta:      state.MakeValueState[[]byte]("meta"),
		Boundary:  timers.InEventTime("boundary"),
	}, beam.Flatten(s, keyed, announced))
}

type gateFn struct {
	keyedStep
	Pending  state.Bag[[]byte] // batches waiting for a boundary (heldFor)
	Meta     state.Value[[]byte]
	Boundary timers.EventTime

	armedHere map[int][]int64 // per key, boundaries set in this bundle
}

func (f *gateFn) Setup() {
	f.keyedStep.setup()
	f.armedHere = map[int][]int64{}
}

// StartBundle declares ProcessElement's emitters, as the SDK requires.
func (f *gateFn) StartBundle(_ func(int, model.EventBatch), _ func(model.TooLate)) {
	clear(f.armedHere)
}

func (f *gateFn) store(key int) shardStore { return f.keyedStep.store(f.Meta, nil, key) }

func (f *gateFn) held() heldBatches { return heldBatches{bag: f.Pending, timer: f.Boundary} }

func (f *gateFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key int, batch model.EventBatch,
	emit func(int, model.EventBatch), late func(model.TooLate)) error {
	return f.store(key).update(ctx, sp, "gate", func(st *shardState) error {
		for _, start := range batch.Windows {
			for _, s := range windowsToArm(f.Policy, start, f.Bound, st.known) {
				f.arm(tp, key, st, s) // a no-op for a window already armed
			}
		}
		// The events' windows and timestamp: from Admit's header while they
		// are coded (events nil), else decoded.
		var events []model.Event
		var err error
		spans, since := batch.Spans, batch.Since
		if batch.Coded == nil || len(spans) == 0 {
			if events, err = coders.BatchEvents(batch); err != nil {
				return fmt.Errorf("gate: %w", err)
			}
			spans, since = spansOf(events, f.Policy)
		}
		// Armed before the batch is judged or held: the announcement may lag.
		for _, start := range spans {
			if !f.Policy.Closed(start, st.known) {
				f.arm(tp, key, st, start)
			}
		}
		until, hold := heldFor(f.armedHere[key], st.known, since)
		switch {
		case len(spans) == 0: // an announcement: no events
		case hold:
			err = f.held().hold(sp, tp, st, batch, until)
		case events == nil && f.Shards == GateKeys && !f.Policy.Closed(slices.Min(spans), st.known):
			// Admit's batch is one gate key's and partition's, so one dedup
			// shard's when dedup runs on GateKeys shards (as on prism), and no
			// event in it is too late: it goes on as it came, still coded.
			emit(key, model.EventBatch{Coded: batch.Coded, N: batch.N, Watermark: st.known})
		default:
			if events == nil {
				events, err = coders.BatchEvents(batch)
			}
			if err == nil {
				f.judge(ctx, st, events, emit, late)
			}
		}
		if err != nil {
			return fmt.Errorf("gate: %w", err)
		}
		return nil
	})
}

// spansOf returns the window starts of events, each once in the order it
// first comes, and their batch's timestamp (batchTimestamp).
func spansOf(events []model.Event, p triggers.Policy) (spans []int64, since int64) {
	for i := range events {
		if start := p.WindowStart(events[i].EventTime); !slices.Contains(spans, start) {
			spans = append(spans, start)
		}
	}
	return spans, batchTimestamp(events)
}

// judge applies rule (b) to each event at the key's known watermark and
// emits the others, in order, in batches of one dedup shard and partition
// (filtered in place: one such batch, always so on GateKeys shards, is not
// copied). A too-late record leaves the read-ahead account here.
func (f *gateFn) judge(ctx context.Context, st *shardState, events []model.Event, emit func(int, model.EventBatch), late func(model.TooLate)) {
	kept := events[:0]
	var first batchKey
	one := true
	for _, e := range events {
		if !st.Gate(&e, f.Policy) {
			f.tooLate.Inc(ctx, 1)
			f.readAhead.Taken(1, e.WatermarkBefore)
			late(TooLateRecord(e))
			continue
		}
		k := batchKey{shard: ShardOf(e.EventID, f.Shards), partition: e.Partition}
		if len(kept) == 0 {
			first = k
		}
		one = one && k == first
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return
	}
	if one {
		emit(first.shard, model.EventBatch{Events: kept, Watermark: st.known})
		return
	}
	var batches groups[batchKey, []model.Event]
	for _, e := range kept {
		b := batches.at(batchKey{shard: ShardOf(e.EventID, f.Shards), partition: e.Partition}, 0)
		*b = append(*b, e)
	}
	batches.flush(func(k batchKey, _ beam.EventTime, events []model.Event) {
		emit(k.shard, model.EventBatch{Events: events, Watermark: st.known})
	})
}

// Gate applies rule (b) to one event: false when its window is closed, else
// it stamps the event.
func (st *shardState) Gate(e *model.Event, p triggers.Policy) bool {
	if p.Closed(p.WindowStart(e.EventTime), st.known) {
		return false
	}
	stamp(e, st.known, p)
	return true
}

// stamp marks an event the gate passed at watermark known: late data
// (AfterEnd) when known passed its window's end, and PipelineWatermark, by
// which dedup forgets ids.
func stamp(e *model.Event, known int64, p triggers.Policy) {
	e.AfterEnd = known != model.NoWatermark && p.WindowEnd(p.WindowStart(e.EventTime)) <= known
	e.PipelineWatermark = known
}

// gatedEvents returns a passed batch's events, decoded and stamped.
func gatedEvents(b model.EventBatch, p triggers.Policy) ([]model.Event, error) {
	events, err := coders.BatchEvents(b)
	if err != nil {
		return nil, err
	}
	for i := range events {
		stamp(&events[i], b.Watermark, p)
	}
	return events, nil
}

func (f *gateFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, key int, t timers.Context,
	emit func(int, model.EventBatch), late func(model.TooLate)) error {
	at, tag, err := parseTimerTag(t.Tag, tagRelease, tagBoundary)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	return f.store(key).update(ctx, sp, "gate", func(st *shardState) error {
		if tag == tagBoundary {
			st.known = max(st.known, at)
			maps.DeleteFunc(st.armed, func(start int64, _ bool) bool { return f.Policy.WindowEnd(start)+f.Retention <= at })
			return nil
		}
		events, err := f.held().release(sp, st, at, f.Policy)
		if err != nil {
			return fmt.Errorf("gate: %w", err)
		}
		f.judge(ctx, st, events, emit, late)
		return nil
	})
}

// setTimer sets an event-time timer at at, holding the output at hold, tagged
// with its kind (tagBoundary, tagRelease) and time, so windows and held
// batches share timers by time.
func setTimer(t timers.EventTime, tp timers.Provider, kind byte, at, hold int64) {
	t.Set(tp, time.UnixMilli(at), timers.WithTag(string(rune(kind))+strconv.FormatInt(at, 10)),
		timers.WithOutputTimestamp(time.UnixMilli(hold)))
}

// parseTimerTag is the inverse of setTimer's tag: time, kind (one of kinds).
func parseTimerTag(tag string, kinds ...byte) (int64, byte, error) {
	if len(tag) < 2 || !slices.Contains(kinds, tag[0]) {
		return 0, 0, fmt.Errorf("unexpected timer tag %q", tag)
	}
	at, err := strconv.ParseInt(tag[1:], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("timer tag %q: %w", tag, err)
	}
	return at, tag[0], nil
}

// tagBoundary names a boundary timer by its time: windows share boundaries,
// so a key fires one timer per boundary time, not three per window.
const tagBoundary = 'b'

// arm sets the timers at a window's end, close and expiry (end + retention)
// the first time the key sees it. Not one timer chained along the boundaries:
// prism v2.77.0 stalls on an event-time timer set from OnTimer once passed.
func (f *gateFn) arm(tp timers.Provider, key int, st *shardState, start int64) {
	if st.armed[start] {
		return
	}
	st.armed[start] = true
	end := f.Policy.WindowEnd(start)
	expiry := end + f.Retention
	for _, at := range []int64{end, f.Policy.CloseTime(start), expiry} {
		if at > st.known || at == expiry {
			setTimer(f.Boundary, tp, tagBoundary, at, at)
			f.armedHere[key] = append(f.armedHere[key], at)
		}
	}
}

// maxGapWindows bounds how many windows below an announced one a gate key
// arms: tiny windows and a long lateness could cost thousands of timers.
const maxGapWindows = 64

// windowsToArm lists, ascending, the windows a gate key arms when start is
// announced: start, and those below it still open when its data moves the
// watermark (end after start - lateness - bound - window, and after known): a
// window whose first data comes after its end must start LATE (SPEC §4), which
// the key learns only from a timer at or after that end.
func windowsToArm(p triggers.Policy, start, boundMs, known int64) []int64 {
	w := p.Window.Milliseconds()
	low := p.WindowStart(start - p.AllowedLateness.Milliseconds() - boundMs - w)
	low = max(low, start-maxGapWindows*w)
	var out []int64
	for s := low; s < start; s += w {
		if p.WindowEnd(s) > known {
			out = append(out, s)
		}
	}
	return append(out, start)
}

// heldFor says whether a batch stamped ts must wait, and until when: the latest
// boundary this bundle armed on the key after known and before ts. A timer set
// in this bundle cannot fire before its end; without the wait SPEC §7's
// scenario C was judged on time (TestBatchAheadOfItsAnnouncementWaitsForTheEnd).
func heldFor(armedHere []int64, known, ts int64) (until int64, hold bool) {
	for _, b := range armedHere {
		if b > known && b < ts && (!hold || b > until) {
			until, hold = b, true
		}
	}
	return until, hold
}
