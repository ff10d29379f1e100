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
	// Retention is how long (event time, from each event's event_time) an
	// event_id is remembered. It must cover window + allowed lateness.
	Retention int64 // ms
	// Shards is the number of dedup state keys.
	Shards int
	// Bound is the out-of-order bound (ms): how far below an announced
	// window the gate arms windows (see windowsToArm).
	Bound int64
	// NoCache makes every batch reload its shard from the runner's state, as
	// on a runner that moves keys between workers: for tests and diagnosis.
	NoCache bool
	// CacheBytes bounds the process-wide cache of decoded shards
	// (DefaultDedupCacheBytes when 0).
	CacheBytes int64
	// ByPosition holds each batch until the watermark passes its timestamp
	// and judges what it releases in source-position order, so that of two
	// copies of an id from one partition the earlier one counts whatever
	// order the runner delivers a key's elements in (see dedup_order.go).
	ByPosition bool
	// ReadAhead names the job's read-ahead account on the embedded runner
	// (flow.ReadAhead; "" for none).
	ReadAhead string
}

// Validate checks the options against SPEC §2.
func (o DedupOptions) Validate() error {
	min := o.Policy.Window.Milliseconds() + o.Policy.AllowedLateness.Milliseconds()
	if o.Retention < min {
		return fmt.Errorf("--dedup-retention %v is shorter than window + allowed lateness (%v): a retry arriving inside the correction period would be counted twice",
			time.Duration(o.Retention)*time.Millisecond, time.Duration(min)*time.Millisecond)
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
// Before any dedup verdict WatermarkGate applies rule (b) of the too-late
// gate on a few keys of its own; the dedup shards, however many, carry no
// watermark timers. In arrival order they learn the watermark, to forget
// ids, from what the gate stamped on the events
// (model.Event.PipelineWatermark); in position order, from their own
// release timers (releaseClock), set only for batches they hold. Their work
// per record does not grow with the shard count but through the batches'
// size (issue #25).
//
// What it counts comes out summed, KV<window key, model.Delta>: per window,
// dims and the gate's AfterEnd, over each batch it judges (a handful of
// elements a batch, not one an event). Conflicts and rule-(b) too-late
// records come out separately: the gate's, and an event of a window whose
// ids the shard already forgot (judge).
func Dedup(s beam.Scope, admitted Admitted, o DedupOptions) (counted, conflicts, tooLate beam.PCollection) {
	s = s.Scope("Dedup")
	if err := o.Validate(); err != nil {
		panic(err) // options are validated by the caller; this is a programming error
	}
	batches, gated := WatermarkGate(s, admitted.Batches, admitted.Windows, o)
	counted, conflicts, forgotten := beam.ParDo3(s, &dedupFn{
		DedupOptions: o,
		CacheID:      flow.Token(8),
		Pending:      state.MakeBagState[[]byte]("pending"),
		Meta:         state.MakeValueState[[]byte]("meta"),
		IDs:          state.MakeBagState[[]byte]("ids"),
		Release:      timers.InEventTime("release"),
	}, batches)
	return counted, conflicts, beam.Flatten(s, gated, forgotten)
}

type dedupFn struct {
	DedupOptions
	// CacheID names this pipeline's entries in the process-wide shard cache.
	CacheID string
	// Pending holds batches until their release timer (ByPosition only).
	Pending state.Bag[[]byte]
	Meta    state.Value[[]byte]
	IDs     state.Bag[[]byte]
	Release timers.EventTime

	counted, duplicates, conflicts, tooLate, expired, reloads, evictions, elements beam.Counter
	entries                                                                        beam.Distribution
	readAhead                                                                      *flow.ReadAhead
	sums                                                                           windowSums
}

func (f *dedupFn) Setup() {
	f.counted = metrics.Counter(metrics.Counted)
	f.duplicates = metrics.Counter(metrics.Duplicates)
	f.conflicts = metrics.Counter(metrics.Conflicts)
	f.tooLate = metrics.Counter(metrics.TooLate)
	f.expired = metrics.Counter(metrics.DedupExpired)
	f.reloads = metrics.Counter(metrics.DedupStateReloads)
	f.evictions = metrics.Counter(metrics.DedupCacheEvictions)
	f.elements = metrics.Counter(metrics.DedupElements)
	f.entries = metrics.Distribution(metrics.DedupStateEntries)
	shardCache.setLimit(f.CacheBytes)
	applyMemoryLimit()
	f.readAhead = flow.ReadAheadOf(f.ReadAhead)
}

func (f *dedupFn) store(shard int) shardStore {
	return shardStore{meta: f.Meta, ids: &f.IDs, key: cacheKey{pipeline: f.CacheID, shard: shard}, noCache: f.NoCache,
		policy: f.Policy, retentionMs: f.Retention, reloads: f.reloads, evictions: f.evictions}
}

func (f *dedupFn) held() heldBatches { return heldBatches{bag: f.Pending, timer: f.Release} }

func (f *dedupFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, batch model.EventBatch,
	emit func(string, model.Delta), conflict func(model.Conflict), late func(model.TooLate)) error {
	return f.summed(emit, func(count func(*model.Event) error) error {
		return f.process(ctx, sp, tp, shard, batch, count, conflict, late)
	})
}

// OnTimer releases the batches held for position order whose wait ended.
func (f *dedupFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, t timers.Context,
	emit func(string, model.Delta), conflict func(model.Conflict), late func(model.TooLate)) error {
	return f.summed(emit, func(count func(*model.Event) error) error {
		return f.onTimer(ctx, sp, tp, shard, t, count, conflict, late)
	})
}

// summed runs one call of the step, its counted events summed (windowSums)
// and emitted once it has judged them all.
func (f *dedupFn) summed(emit func(string, model.Delta), call func(count func(*model.Event) error) error) error {
	f.sums.policy = f.Policy
	if err := call(f.sums.add); err != nil {
		f.sums.sums.reset()
		return err
	}
	f.sums.flush(emit)
	return nil
}

// process judges a batch, or holds it (ByPosition); count takes each event
// counted.
func (f *dedupFn) process(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, batch model.EventBatch,
	count func(*model.Event) error, conflict func(model.Conflict), late func(model.TooLate)) error {
	// Out of the runner's queue: judged now, or held in state (ByPosition).
	// The dedup step, the slowest, pays the read-ahead account: what the
	// gate passed waits in prism's queue in front of it.
	events, err := gatedEvents(batch, f.Policy)
	if err != nil {
		return fmt.Errorf("dedup: %w", err)
	}
	// How far the sources had read (the read-ahead account's frontier), and
	// the gate's watermark, by which dedup forgets in arrival order.
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
		// Held, not judged: the shard forgets only as its release timers
		// fire (OnTimer), never by the watermark stamped on a batch.
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
// An event of a window whose ids the shard already forgot is too late, not
// judged: its id may be one the shard forgot, and counting it could count
// it twice. In arrival order the shard forgets by the watermark a gate key
// stamped on a batch, and the gate's keys learn the watermark each from its
// own timers, so a key still behind can pass such an event after another
// key's stamp reached the shard; that stamp proved the window closed
// (forgetting comes one window after the close), so rule (b) holds at the
// watermark the shard knows. Position order's release clock lets no such
// event come (releaseClock), and there this is never taken.
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
	// The ids this batch remembered, appended without reading the bag: the
	// cache is only an optimisation, the bag is the state.
	if blob := added.blob(); blob != nil {
		if err := f.IDs.Add(sp, blob); err != nil {
			return fmt.Errorf("dedup: append ids: %w", err)
		}
	}
	st.stored += added.n
	f.entries.Update(ctx, int64(st.ids.n))
	return nil
}

// advance moves the shard's expiry clock to w: it forgets the ids whose
// retention passed and rewrites the ids bag when compaction is due (the
// rewrite keeps every id the clock has not expired, so a reload and the
// cache agree). The clock is, in arrival order, the watermark the gate
// stamped on a batch, before the batch that brings the news is judged; in
// position order, the time of the shard's last release (releaseClock).
func (f *dedupFn) advance(ctx context.Context, sp state.Provider, shard int, st *shardState, w int64) error {
	forgot, compact := st.advance(shard, w, f.Retention, f.Policy)
	if forgot > 0 {
		f.expired.Inc(ctx, int64(forgot))
	}
	if !compact {
		return nil
	}
	// Compact the bag: rewrite what is left, in bounded blobs, at the
	// shard's own slot (compactionDue) or at the cap.
	st.stored = st.ids.n
	if err := f.IDs.Clear(sp); err != nil {
		return fmt.Errorf("dedup: clear ids: %w", err)
	}
	for _, blob := range st.encodeIDs(f.Policy) {
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
	at, tag, err := parseTimerTag(t.Tag)
	if err != nil {
		return fmt.Errorf("dedup: %w", err)
	}
	if tag != tagRelease {
		return fmt.Errorf("dedup: unexpected timer tag %q", t.Tag)
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
// release timer at at has fired and what it released is judged: to at - 1,
// the time the timer waited for. Invariant: no id is forgotten while a copy
// that could still be judged needs it. A window's ids expire at
// window_end + retention, after its close (retention >= window + lateness).
//   - A batch still held waits for a time >= at (release took those before
//     it), and each of its events passed rule (a), so its window closes after
//     the event's partition watermark, which is >= the batch's wait: after
//     at - 1.
//   - A copy not yet here: the timer fired, so the step's input watermark is
//     >= at. A copy on its way holds that watermark at or below its
//     window's close, and the gate passes none once it fired the close
//     timer; so no copy of a window whose expiry is <= at - 1 can come.
//
// The watermark the gate stamped on a batch gives no such bound (a gate key
// may be ahead of the one that passed a held or travelling copy), so in
// position order it never makes the shard forget. A release at or before
// the earliest timestamp (a record with no partition watermark yet) moves
// nothing.
func releaseClock(at int64) int64 {
	if at-1 <= int64(mtime.MinTimestamp) {
		return model.NoWatermark
	}
	return at - 1
}

// shardStore reads and writes a keyed step's shardState: a meta value and,
// for the dedup shards, an ids bag, through the process-wide cache.
type shardStore struct {
	meta state.Value[[]byte]
	ids  *state.Bag[[]byte] // nil: the key holds no ids (the gate)
	key  cacheKey
	// noCache reloads from the runner's state every time.
	noCache            bool
	policy             triggers.Policy
	retentionMs        int64
	reloads, evictions beam.Counter
}

// update loads the key's state, lets fn change it and saves it; step names
// the step in a load error.
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
// stored one, else decoded from the runner's state. The cache entry is
// dropped while the caller mutates the state: a failure half-way leaves no
// stale entry.
func (s shardStore) load(ctx context.Context, sp state.Provider) (*shardState, error) {
	b, _, err := s.meta.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("read meta: %w", err)
	}
	m, err := decodeMeta(b, model.NoWatermark)
	if err != nil {
		return nil, err
	}
	if c, ok := shardCache.take(s.key); ok && !s.noCache && m.token != 0 && c.token == m.token {
		c.st.known = max(c.st.known, m.known)
		return c.st, nil
	}
	s.reloads.Inc(ctx, 1)
	st := newShardState(m)
	if m.token == 0 || s.ids == nil {
		return st, nil
	}
	blobs, _, err := s.ids.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	return st, st.loadIDs(blobs, s.policy, s.retentionMs)
}

// save writes the meta with a fresh token and refreshes the cache.
func (s shardStore) save(ctx context.Context, sp state.Provider, st *shardState) error {
	token := mrand.Uint64() | 1
	if err := s.meta.Write(sp, encodeMeta(token, st)); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	if !s.noCache {
		if n := shardCache.put(s.key, token, st); n > 0 {
			s.evictions.Inc(ctx, int64(n))
		}
	}
	return nil
}
