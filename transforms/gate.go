package transforms

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
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
// on marked AfterEnd when it passed their window's end, and stamped with it
// (model.Event.PipelineWatermark, by which dedup forgets ids).
//
// A DoFn cannot read its watermark, so each key sets event-time timers at the
// end, close and expiry of every window (AnnounceWindows tells every key of
// every window): a timer fired at T proves the watermark reached T. Records
// leave already in the dedup step's batches, one shard and partition each.
func WatermarkGate(s beam.Scope, keyed, windows beam.PCollection, o DedupOptions) (batches, tooLate beam.PCollection) {
	s = s.Scope("WatermarkGate")
	announced := AnnounceWindows(s, windows, GateKeys, o.Policy, o.Bound)
	return beam.ParDo2(s, &gateFn{
		Shards:      o.Shards,
		Policy:      o.Policy,
		BoundMs:     o.Bound,
		RetentionMs: o.Retention,
		CacheID:     flow.Token(8),
		NoCache:     o.NoCache,
		ReadAhead:   o.ReadAhead,
		Pending:     state.MakeBagState[[]byte]("pending"),
		Meta:        state.MakeValueState[[]byte]("meta"),
		Boundary:    timers.InEventTime("boundary"),
	}, beam.Flatten(s, keyed, announced))
}

type gateFn struct {
	Shards      int // the dedup step's, which passed records are batched by
	Policy      triggers.Policy
	BoundMs     int64
	RetentionMs int64

	CacheID   string // this step's entries in the process-wide shard cache
	NoCache   bool
	ReadAhead string
	Pending   state.Bag[[]byte] // batches waiting for a boundary (heldFor)
	Meta      state.Value[[]byte]
	Boundary  timers.EventTime

	tooLate, reloads, evictions beam.Counter
	readAhead                   *flow.ReadAhead
	armedHere                   map[int][]int64 // per key, boundaries set in this bundle
}

func (f *gateFn) Setup() {
	f.tooLate = metrics.Counter(metrics.TooLate)
	f.reloads = metrics.Counter(metrics.DedupStateReloads)
	f.evictions = metrics.Counter(metrics.DedupCacheEvictions)
	f.readAhead = flow.ReadAheadOf(f.ReadAhead)
	f.armedHere = map[int][]int64{}
}

// StartBundle declares ProcessElement's emitters, as the SDK requires.
func (f *gateFn) StartBundle(_ func(int, model.EventBatch), _ func(model.TooLate)) {
	clear(f.armedHere)
}

func (f *gateFn) store(key int) shardStore {
	return shardStore{meta: f.Meta, key: cacheKey{pipeline: f.CacheID, shard: key}, noCache: f.NoCache}
}

func (f *gateFn) held() heldBatches { return heldBatches{bag: f.Pending, timer: f.Boundary} }

func (f *gateFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key int, batch model.EventBatch,
	emit func(int, model.EventBatch), late func(model.TooLate)) error {
	st, err := f.store(key).load(ctx, sp, f.reloads)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	for _, start := range batch.Windows {
		for _, s := range windowsToArm(f.Policy, start, f.BoundMs, st.known) {
			f.arm(tp, key, st, s) // a no-op for a window already armed
		}
	}
	f.armEvents(tp, key, st, batch.Events)
	if len(batch.Events) > 0 {
		if until, hold := heldFor(f.armedHere[key], st.known, batchTimestamp(batch)); hold {
			if err := f.held().hold(sp, tp, st, batch, until); err != nil {
				return fmt.Errorf("gate: %w", err)
			}
			return f.store(key).save(ctx, sp, st, f.evictions)
		}
	}
	f.judge(ctx, st, batch.Events, emit, late)
	return f.store(key).save(ctx, sp, st, f.evictions)
}

// judge applies rule (b) to each event at the key's known watermark and
// emits the others in batches of one dedup shard and partition, in order. A
// too-late record never reaches dedup, so it leaves the read-ahead account here.
// The events kept are filtered in place; a batch whose events all go to one
// shard and partition (every batch when the dedup step has GateKeys shards, as
// on prism) leaves as it is, without a copy.
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
		emit(first.shard, model.EventBatch{Events: kept})
		return
	}
	var batches groups[batchKey, []model.Event]
	for _, e := range kept {
		b := batches.at(batchKey{shard: ShardOf(e.EventID, f.Shards), partition: e.Partition}, 0)
		*b = append(*b, e)
	}
	batches.flush(func(k batchKey, _ beam.EventTime, events []model.Event) {
		emit(k.shard, model.EventBatch{Events: events})
	})
}

// Gate applies rule (b) to one event at the known watermark: false when its
// window is closed; else it marks AfterEnd and stamps the watermark.
func (st *shardState) Gate(e *model.Event, p triggers.Policy) bool {
	start := p.WindowStart(e.EventTime)
	if p.Closed(start, st.known) {
		return false
	}
	e.AfterEnd = st.known != model.NoWatermark && p.WindowEnd(start) <= st.known
	e.PipelineWatermark = st.known
	return true
}

func (f *gateFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, key int, t timers.Context,
	emit func(int, model.EventBatch), late func(model.TooLate)) error {
	at, tag, err := parseTimerTag(t.Tag)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	st, err := f.store(key).load(ctx, sp, f.reloads)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	switch tag {
	case tagRelease:
		events, err := f.held().release(sp, st, at)
		if err != nil {
			return fmt.Errorf("gate: %w", err)
		}
		f.judge(ctx, st, events, emit, late)
	case tagBoundary:
		st.known = max(st.known, at)
		maps.DeleteFunc(st.armed, func(start int64, _ bool) bool { return f.Policy.WindowEnd(start)+f.RetentionMs <= at })
	default:
		return fmt.Errorf("gate: unexpected timer tag %q", t.Tag)
	}
	return f.store(key).save(ctx, sp, st, f.evictions)
}

// setTimer sets an event-time timer at at, tagged with its kind
// (tagBoundary, tagRelease) and time: windows and held batches share
// timers by time.
func setTimer(t timers.EventTime, tp timers.Provider, kind byte, at int64) {
	t.Set(tp, time.UnixMilli(at), timers.WithTag(string(rune(kind))+strconv.FormatInt(at, 10)))
}

// parseTimerTag splits a timer tag into its kind (tagBoundary, tagRelease)
// and time, as setTimer wrote them.
func parseTimerTag(tag string) (int64, byte, error) {
	if len(tag) < 2 {
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
	expiry := end + f.RetentionMs
	for _, at := range []int64{end, f.Policy.CloseTime(start), expiry} {
		if at > st.known || at == expiry {
			setTimer(f.Boundary, tp, tagBoundary, at)
			f.armedHere[key] = append(f.armedHere[key], at)
		}
	}
}

// armEvents arms the still-open windows of a batch's events before it is
// judged or held: the announcement (AnnounceWindows) may lag the batches.
func (f *gateFn) armEvents(tp timers.Provider, key int, st *shardState, events []model.Event) {
	last, armed := int64(0), false
	for _, e := range events {
		start := f.Policy.WindowStart(e.EventTime)
		if armed && start == last {
			continue
		}
		last, armed = start, true
		if !f.Policy.Closed(start, st.known) {
			f.arm(tp, key, st, start)
		}
	}
}
