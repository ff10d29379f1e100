package transforms

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn8x1[context.Context, state.Provider, timers.Provider, int, model.EventBatch,
		func(string, model.Delta), func(model.Conflict), func(model.TooLate), error](&dedupFn{})
	register.Emitter2[string, model.Delta]()
	register.Emitter1[model.Conflict]()
}

// DedupOptions configures Dedup.
type DedupOptions struct {
	Policy triggers.Policy
	// Retention is how long (ms of event time after its event_time) an
	// event_id is remembered; at least window + allowed lateness.
	Retention int64
	Shards    int   // dedup state keys
	Bound     int64 // out-of-order bound (ms): how far below an announced window the gate arms (windowsToArm)
	// NoCache reloads the shard from the runner's state for every batch, as
	// on a runner that moves keys between workers (tests, diagnosis).
	NoCache bool
	// CacheBytes bounds the process-wide shard cache (DefaultDedupCacheBytes when 0).
	CacheBytes int64
	// ByPosition holds each batch until the watermark passes its timestamp and
	// judges what it releases in source-position order: of two copies from one
	// partition the earlier counts, whatever the delivery order (dedup_order.go).
	ByPosition bool
	// ReadAhead names the job's read-ahead account (flow.ReadAhead; "": none).
	ReadAhead string
}

// Validate checks the options against SPEC §2.
func (o DedupOptions) Validate() error {
	min := o.Policy.Lifetime().Milliseconds()
	if o.Retention < min {
		return fmt.Errorf("--dedup-retention %v is shorter than window + allowed lateness (%v): a retry arriving inside the correction period would be counted twice",
			time.Duration(o.Retention)*time.Millisecond, time.Duration(min)*time.Millisecond)
	}
	if o.Shards <= 0 {
		return fmt.Errorf("dedup shards must be positive, got %d", o.Shards)
	}
	return nil
}

// Dedup keeps the first copy of every event_id (SPEC §4): an identical copy
// (same fingerprint) is dropped and counted, one with another fingerprint goes
// to conflicts, never counted.
//
// WatermarkGate applies too-late rule (b) first, on keys of its own, so the
// shards carry no watermark timers and their work per record does not grow
// with their number (issue #25). They forget ids by the watermark the gate
// stamped on the events (model.Event.PipelineWatermark) in arrival order, by
// their own release timers (releaseClock) in position order.
//
// Counted events come out summed per window, dims and AfterEnd over each
// judged batch, KV<window key, model.Delta>. Too-late records are the gate's
// and those of windows whose ids the shard already forgot (judge). o must
// have passed Validate (pipeline.Options.Validate).
func Dedup(s beam.Scope, admitted Admitted, o DedupOptions) (counted, conflicts, tooLate beam.PCollection) {
	s = s.Scope("Dedup")
	batches, gated := WatermarkGate(s, admitted.Batches, admitted.Windows, o)
	counted, conflicts, forgotten := beam.ParDo3(s, &dedupFn{
		keyedStep: newKeyedStep(o),
		Pending:   state.MakeBagState[[]byte]("pending"),
		Meta:      state.MakeValueState[[]byte]("meta"),
		IDs:       state.MakeBagState[[]byte]("ids"),
		Release:   timers.InEventTime("release"),
	}, batches)
	return counted, conflicts, beam.Flatten(s, gated, forgotten)
}

type dedupFn struct {
	keyedStep
	// Pending holds batches until their release timer (ByPosition only).
	Pending state.Bag[[]byte]
	Meta    state.Value[[]byte]
	IDs     state.Bag[[]byte]
	Release timers.EventTime

	counted, duplicates, conflicts, expired, elements beam.Counter
	entries                                           beam.Distribution
	sums                                              windowSums
}

func (f *dedupFn) Setup() {
	f.keyedStep.setup()
	f.sums.policy = f.Policy
	f.counted = metrics.Counter(metrics.Counted)
	f.duplicates = metrics.Counter(metrics.Duplicates)
	f.conflicts = metrics.Counter(metrics.Conflicts)
	f.expired = metrics.Counter(metrics.DedupExpired)
	f.elements = metrics.Counter(metrics.DedupElements)
	f.entries = metrics.Distribution(metrics.DedupStateEntries)
	shardCache.setLimit(f.CacheBytes)
	applyMemoryLimit()
}

func (f *dedupFn) store(shard int) shardStore { return f.keyedStep.store(f.Meta, &f.IDs, shard) }

func (f *dedupFn) held() heldBatches { return heldBatches{bag: f.Pending, timer: f.Release} }

func (f *dedupFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, batch model.EventBatch,
	emit func(string, model.Delta), conflict func(model.Conflict), late func(model.TooLate)) error {
	return f.flush(emit, f.process(ctx, sp, tp, shard, batch, f.sums.add, conflict, late))
}

// OnTimer releases the batches held for position order whose wait ended.
func (f *dedupFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, t timers.Context,
	emit func(string, model.Delta), conflict func(model.Conflict), late func(model.TooLate)) error {
	return f.flush(emit, f.onTimer(ctx, sp, tp, shard, t, f.sums.add, conflict, late))
}

// flush emits what one call counted, summed per window (windowSums), once it
// has judged it all; after an error (err) it drops the sums.
func (f *dedupFn) flush(emit func(string, model.Delta), err error) error {
	if err != nil {
		f.sums.sums.reset()
		return err
	}
	f.sums.flush(emit)
	return nil
}

// process judges a batch, or holds it (ByPosition); count takes each event
// counted. The dedup step, the slowest, pays the read-ahead account: what the
// gate passed waits in prism's queue in front of it.
func (f *dedupFn) process(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, batch model.EventBatch,
	count func(*model.Event) error, conflict func(model.Conflict), late func(model.TooLate)) error {
	events, err := gatedEvents(batch, f.Policy)
	if err != nil {
		return fmt.Errorf("dedup: %w", err)
	}
	// How far the sources had read (the read-ahead account's frontier), and
	// the gate's watermark (arrival order forgets by it).
	read, known := model.NoWatermark, model.NoWatermark
	for i := range events {
		read, known = max(read, events[i].WatermarkBefore), max(known, events[i].PipelineWatermark)
	}
	defer f.readAhead.Taken(len(events), read)
	f.elements.Inc(ctx, 1)
	return f.store(shard).update(ctx, sp, "dedup", func(st *shardState) error {
		if !f.ByPosition {
			if err := f.advance(ctx, sp, shard, st, known); err != nil {
				return err
			}
			return f.judge(ctx, sp, st, events, count, conflict, late)
		}
		// Held: the shard forgets only as its release timers fire (OnTimer).
		if len(events) > 0 {
			if err := f.held().hold(sp, tp, st, batch, batchTimestamp(events)); err != nil {
				return fmt.Errorf("dedup: %w", err)
			}
		}
		return nil
	})
}

// judge gives each event its verdict in the order given, counts and appends
// the counted ids to the bag; the caller saves the shard.
//
// An event of a window whose ids the shard forgot is too late, not judged:
// counting it could count it twice. In arrival order a gate key still behind
// can pass one after another key's stamp made the shard forget; that stamp
// proved the window closed (forgetting comes one window after the close), so
// rule (b) holds. In position order releaseClock lets no such event come.
func (f *dedupFn) judge(ctx context.Context, sp state.Provider, st *shardState, events []model.Event,
	count func(*model.Event) error, conflict func(model.Conflict), late func(model.TooLate)) error {
	var added idBlobs
	for i := range events {
		e := &events[i]
		if st.Forgot(e.EventTime, f.Retention, f.Policy) {
			f.tooLate.Inc(ctx, 1)
			late(TooLateRecord(*e))
			continue
		}
		switch v := st.Judge(e, f.Policy); v.Verdict {
		case event.Duplicate:
			if faults.Fire(faults.UncountDuplicate) {
				continue
			}
			f.duplicates.Inc(ctx, 1)
		case event.Conflict:
			f.conflicts.Inc(ctx, 1)
			conflict(model.Conflict{
				Position:               e.Position,
				EventID:                e.EventID,
				FirstFingerprint:       v.First,
				ConflictingFingerprint: e.Fingerprint,
				Payload:                e.Payload,
				Ref:                    e.Ref,
			})
		case event.Counted:
			added.add(v.window, v.id, e.Fingerprint)
			f.counted.Inc(ctx, 1)
			if err := count(e); err != nil {
				return fmt.Errorf("dedup: %w", err)
			}
		}
	}
	// Appended without reading the bag: the bag is the state, the cache only an optimisation.
	if blob := added.blob(); blob != nil {
		if err := f.IDs.Add(sp, blob); err != nil {
			return fmt.Errorf("dedup: append ids: %w", err)
		}
	}
	st.stored += added.n
	f.entries.Update(ctx, int64(st.ids.n))
	return nil
}

// advance moves the shard's expiry clock to w, forgetting the ids whose
// retention passed, and rewrites the ids bag (its live ids: a reload and the
// cache agree) when compaction is due. The clock is the watermark the gate
// stamped on a batch, before that batch is judged (arrival order), or the
// shard's last release (position order, releaseClock).
func (f *dedupFn) advance(ctx context.Context, sp state.Provider, shard int, st *shardState, w int64) error {
	forgot, compact := st.advance(shard, w, f.Retention, f.Policy)
	if forgot > 0 {
		f.expired.Inc(ctx, int64(forgot))
	}
	if !compact {
		return nil
	}
	if err := f.IDs.Clear(sp); err != nil {
		return fmt.Errorf("dedup: clear ids: %w", err)
	}
	for _, blob := range st.compact(f.Policy) {
		if err := f.IDs.Add(sp, blob); err != nil {
			return fmt.Errorf("dedup: rewrite ids: %w", err)
		}
	}
	f.entries.Update(ctx, int64(st.ids.n))
	return nil
}

// onTimer releases the batches held for position order whose wait ended.
func (f *dedupFn) onTimer(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, t timers.Context,
	count func(*model.Event) error, conflict func(model.Conflict), late func(model.TooLate)) error {
	at, _, err := parseTimerTag(t.Tag, tagRelease)
	if err != nil {
		return fmt.Errorf("dedup: %w", err)
	}
	return f.store(shard).update(ctx, sp, "dedup", func(st *shardState) error {
		events, err := f.held().release(sp, st, at, f.Policy)
		if err != nil {
			return fmt.Errorf("dedup: %w", err)
		}
		if err := f.judge(ctx, sp, st, events, count, conflict, late); err != nil {
			return err
		}
		return f.advance(ctx, sp, shard, st, releaseClock(at))
	})
}

// releaseClock is how far a shard in position order may forget once its
// release timer at at fired and what it released is judged: to at - 1.
// Invariant: no id is forgotten while a copy that could still be judged needs
// it (ids expire at window_end + retention, after the close):
//   - a batch still held waits for a time >= at, and each of its events passed
//     rule (a), so its window closes after at - 1;
//   - a copy not yet here holds the step's input watermark (>= at, the timer
//     fired) at or below its window's close, and the gate passes none after
//     the close; so no copy of a window expired by at - 1 can come.
//
// The gate's stamp gives no such bound (a gate key may be ahead of the one
// that passed a held or travelling copy), so in position order it never makes
// the shard forget. A release at or before the earliest timestamp (no
// partition watermark yet) moves nothing.
func releaseClock(at int64) int64 {
	if at-1 <= int64(mtime.MinTimestamp) {
		return model.NoWatermark
	}
	return at - 1
}

// keyedStep is what the gate and the dedup shards share but their state and
// timer fields, which stay theirs: Beam looks for those only among a DoFn's
// own fields, not embedded ones (graph/fn.go, v2.77.0).
type keyedStep struct {
	DedupOptions
	CacheID string // this step's entries in the process-wide shard cache

	tooLate, reloads, evictions beam.Counter
	readAhead                   *flow.ReadAhead
}

func newKeyedStep(o DedupOptions) keyedStep {
	return keyedStep{DedupOptions: o, CacheID: flow.Token(8)}
}

func (k *keyedStep) setup() {
	k.tooLate = metrics.Counter(metrics.TooLate)
	k.reloads = metrics.Counter(metrics.DedupStateReloads)
	k.evictions = metrics.Counter(metrics.DedupCacheEvictions)
	k.readAhead = flow.ReadAheadOf(k.ReadAhead)
}

// store is key's shardStore of meta and ids (nil on the gate).
func (k *keyedStep) store(meta state.Value[[]byte], ids *state.Bag[[]byte], key int) shardStore {
	return shardStore{keyedStep: k, meta: meta, ids: ids, key: cacheKey{pipeline: k.CacheID, shard: key}}
}

// shardStore reads and writes a keyed step's shardState: a meta value and,
// for the dedup shards, an ids bag, through the process-wide cache.
type shardStore struct {
	*keyedStep
	meta state.Value[[]byte]
	ids  *state.Bag[[]byte] // nil: the key holds no ids (the gate)
	key  cacheKey
}

// update loads the key's state, lets fn change it and saves it; step
// prefixes a load error.
func (s shardStore) update(ctx context.Context, sp state.Provider, step string, fn func(*shardState) error) error {
	st, err := s.load(ctx, sp)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if err := fn(st); err != nil {
		return err
	}
	return s.save(ctx, sp, st)
}

// load returns the key's state, from the cache when its token matches the
// stored one, else decoded from the runner's state. The cache entry is taken
// out while the caller mutates the state: a failure half-way leaves none stale.
func (s shardStore) load(ctx context.Context, sp state.Provider) (*shardState, error) {
	b, _, err := s.meta.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("read meta: %w", err)
	}
	token, m, err := decodeMeta(b, model.NoWatermark)
	if err != nil {
		return nil, err
	}
	if c, ok := shardCache.take(s.key); ok && !s.NoCache && token != 0 && c.token == token {
		c.st.known = max(c.st.known, m.known)
		return c.st, nil
	}
	s.reloads.Inc(ctx, 1)
	st := &m
	if token == 0 || s.ids == nil {
		return st, nil
	}
	blobs, _, err := s.ids.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	return st, st.loadIDs(blobs, s.Policy, s.Retention)
}

// save writes the meta with a fresh token and refreshes the cache.
func (s shardStore) save(ctx context.Context, sp state.Provider, st *shardState) error {
	token := mrand.Uint64() | 1
	if err := s.meta.Write(sp, encodeMeta(token, st)); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	if !s.NoCache {
		if n := shardCache.put(s.key, token, st); n > 0 {
			s.evictions.Inc(ctx, int64(n))
		}
	}
	return nil
}
