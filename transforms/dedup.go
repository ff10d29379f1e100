package transforms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strconv"

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
	// Bound is the out-of-order bound (ms): how far below an announced
	// window the shards arm windows (see windowsToArm).
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
// cannot read its watermark, so each shard sets event-time timers at the end,
// close and expiry of every window: AnnounceWindows tells every shard about
// every window with data, so the verdict never depends on which ids a shard
// holds (a returning partition's id may land on a shard that holds none of
// its window). A fired timer at T proves
// the pipeline watermark reached T; windows whose close time is <= T are
// closed, and windows whose end is <= T take late data. Every event let
// through carries a timestamp below its window's close time (the partition
// watermark before it, which rule (a) checked), and that timestamp holds the
// revision step's watermark until the event is counted: FINAL cannot overtake
// it.
//
// The counted events carry AfterEnd; conflicts and rule-(b) too-late records
// come out separately.
func Dedup(s beam.Scope, events beam.PCollection, o DedupOptions) (counted, conflicts, tooLate beam.PCollection) {
	s = s.Scope("Dedup")
	if err := o.Validate(); err != nil {
		panic(err) // options are validated by the caller; this is a programming error
	}
	batches, windows := BatchByShard(s, events, o.Shards, o.Policy)
	announced := AnnounceWindows(s, windows, o.Shards, o.Policy, o.Bound)
	return beam.ParDo3(s, &dedupFn{
		Policy:      o.Policy,
		BoundMs:     o.Bound,
		RetentionMs: o.Retention,
		CacheID:     newCacheID(),
		NoCache:     o.NoCache,
		CacheBytes:  o.CacheBytes,
		ByPosition:  o.ByPosition,
		ReadAhead:   o.ReadAhead,
		Pending:     state.MakeBagState[[]byte]("pending"),
		Meta:        state.MakeValueState[[]byte]("meta"),
		IDs:         state.MakeBagState[[]byte]("ids"),
		Boundary:    timers.InEventTime("boundary"),
	}, beam.Flatten(s, batches, announced))
}

type dedupFn struct {
	Policy      triggers.Policy
	BoundMs     int64
	RetentionMs int64

	// CacheID names this pipeline's entries in the process-wide shard cache.
	CacheID    string
	NoCache    bool
	CacheBytes int64
	ByPosition bool
	ReadAhead  string
	// Pending holds batches until their release timer (ByPosition only).
	Pending  state.Bag[[]byte]
	Meta     state.Value[[]byte]
	IDs      state.Bag[[]byte]
	Boundary timers.EventTime

	counted, duplicates, conflicts, tooLate, expired, reloads, evictions, elements beam.Counter
	entries                                                                        beam.Distribution
	readAhead                                                                      *flow.ReadAhead
	// armedHere holds, per shard, the boundaries whose timers this bundle
	// set (see heldFor).
	armedHere map[int][]int64
}

// StartBundle declares the emitters the SDK requires of it (those of
// ProcessElement).
func (f *dedupFn) StartBundle(_ func(model.Event), _ func(model.Conflict), _ func(model.TooLate)) {
	clear(f.armedHere)
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
	f.armedHere = map[int][]int64{}
}

// load returns the shard's state, from the cache when its token matches the
// stored one, else decoded from the bag. The cache entry is dropped while the
// caller mutates the state: a failure half-way leaves no stale entry.
func (f *dedupFn) load(ctx context.Context, sp state.Provider, shard int) (*shardState, error) {
	b, _, err := f.Meta.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("dedup: read meta: %w", err)
	}
	m, err := decodeMeta(b, model.NoWatermark)
	if err != nil {
		return nil, err
	}
	key := cacheKey{pipeline: f.CacheID, shard: shard}
	if c, ok := shardCache.take(key); ok && !f.NoCache && m.token != 0 && c.token == m.token {
		c.st.known = max(c.st.known, m.known)
		return c.st, nil
	}
	f.reloads.Inc(ctx, 1)
	st := newShardState(m)
	if m.token == 0 {
		return st, nil
	}
	blobs, _, err := f.IDs.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("dedup: read ids: %w", err)
	}
	return st, st.loadIDs(blobs, f.Policy, f.RetentionMs)
}

// save writes the meta with a fresh token and refreshes the cache.
func (f *dedupFn) save(ctx context.Context, sp state.Provider, shard int, st *shardState) error {
	token := mrand.Uint64() | 1
	if err := f.Meta.Write(sp, encodeMeta(token, st)); err != nil {
		return fmt.Errorf("dedup: write meta: %w", err)
	}
	if !f.NoCache {
		if n := shardCache.put(cacheKey{pipeline: f.CacheID, shard: shard}, token, st); n > 0 {
			f.evictions.Inc(ctx, int64(n))
		}
	}
	return nil
}

// tagBoundary names a boundary timer by its time: windows share boundaries
// (a window's end is the next one's start, and with a lateness and a
// retention of whole windows its close and expiry are other windows' ends),
// so a shard fires one timer per boundary time, not three per window.
const tagBoundary = 'b'

// arm sets the timers at a window's end (ON_TIME is due, later data is
// late), close (end + allowed lateness: the window is closed) and expiry (end
// + retention: its ids can be forgotten) the first time the shard sees it.
// Each fired timer at T proves the watermark reached T.
//
// (A single timer chained along the boundaries would be smaller, but prism
// v2.77.0 stalls on an event-time timer set from OnTimer once the watermark
// has passed it.)
func (f *dedupFn) arm(tp timers.Provider, shard int, st *shardState, start int64) {
	if st.armed[start] {
		return
	}
	st.armed[start] = true
	end := f.Policy.WindowEnd(start)
	expiry := end + f.RetentionMs
	for _, at := range []int64{end, f.Policy.CloseTime(start), expiry} {
		if at > st.known || at == expiry {
			f.Boundary.Set(tp, timeOf(at), timers.WithTag(string(rune(tagBoundary))+strconv.FormatInt(at, 10)))
			f.armedHere[shard] = append(f.armedHere[shard], at)
		}
	}
}

// armEvents arms the windows of a batch's events that are still open on the
// shard, before the batch is judged or held: a window's first data on a
// shard arms it, whatever the window's announcement (AnnounceWindows, a
// stage of its own that may lag the batches) has done so far. A window armed
// here in this bundle makes a batch stamped after its end wait for it
// (heldFor).
func (f *dedupFn) armEvents(tp timers.Provider, shard int, st *shardState, events []model.Event) {
	last, armed := int64(0), false
	for _, e := range events {
		start := f.Policy.WindowStart(e.EventTime)
		if armed && start == last {
			continue
		}
		last, armed = start, true
		if !f.Policy.Closed(start, st.known) {
			f.arm(tp, shard, st, start)
		}
	}
}

func (f *dedupFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, batch model.EventBatch,
	emit func(model.Event), conflict func(model.Conflict), late func(model.TooLate)) error {
	// Out of the runner's queue: judged now, or held in state (ByPosition).
	defer f.readAhead.Taken(len(batch.Events))
	f.elements.Inc(ctx, 1)
	st, err := f.load(ctx, sp, shard)
	if err != nil {
		return err
	}
	f.armAnnounced(tp, shard, st, batch.Windows)
	f.armEvents(tp, shard, st, batch.Events)
	if len(batch.Events) > 0 {
		until, hold := batchTimestamp(batch), f.ByPosition
		if !hold {
			until, hold = heldFor(f.armedHere[shard], st.known, until)
		}
		if hold {
			if err := f.hold(sp, tp, st, batch, until); err != nil {
				return err
			}
			return f.save(ctx, sp, shard, st)
		}
	}
	return f.judge(ctx, sp, tp, shard, st, batch.Events, emit, conflict, late)
}

// judge gives each event its verdict in the order given, emits, appends the
// counted ids to the bag and saves the shard.
func (f *dedupFn) judge(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, st *shardState, events []model.Event,
	emit func(model.Event), conflict func(model.Conflict), late func(model.TooLate)) error {
	var added idBlobs
	for _, e := range events {
		switch v := st.Judge(&e, f.Policy); v.Verdict {
		case TooLateVerdict:
			f.tooLate.Inc(ctx, 1)
			late(TooLateRecord(e))
		case DuplicateVerdict:
			f.duplicates.Inc(ctx, 1)
		case ConflictVerdict:
			f.conflicts.Inc(ctx, 1)
			conflict(model.Conflict{
				Position:               e.Position,
				EventID:                e.EventID,
				FirstFingerprint:       v.First,
				ConflictingFingerprint: e.Fingerprint,
				Payload:                e.Payload,
				Ref:                    e.Ref,
			})
		case CountVerdict:
			added.add(v.window, v.id, e.Fingerprint)
			f.counted.Inc(ctx, 1)
			emit(e)
		}
	}
	// The ids this batch remembered, appended without reading the bag: the
	// cache is only an optimisation, the bag is the state.
	for _, blob := range added.blobs() {
		if err := f.IDs.Add(sp, blob); err != nil {
			return fmt.Errorf("dedup: append ids: %w", err)
		}
	}
	st.stored += added.n
	f.entries.Update(ctx, int64(st.ids.n))
	return f.save(ctx, sp, shard, st)
}

func (f *dedupFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, shard int, t timers.Context,
	emit func(model.Event), conflict func(model.Conflict), late func(model.TooLate)) error {
	if len(t.Tag) < 2 {
		return fmt.Errorf("dedup: unexpected timer tag %q", t.Tag)
	}
	at, err := strconv.ParseInt(t.Tag[1:], 10, 64)
	if err != nil {
		return fmt.Errorf("dedup: timer tag %q: %w", t.Tag, err)
	}
	st, err := f.load(ctx, sp, shard)
	if err != nil {
		return err
	}
	switch t.Tag[0] {
	case tagRelease:
		events, err := f.release(sp, st, at)
		if err != nil {
			return err
		}
		return f.judge(ctx, sp, tp, shard, st, events, emit, conflict, late)
	case tagBoundary:
	default:
		return fmt.Errorf("dedup: unexpected timer tag %q", t.Tag)
	}
	forgot, compact := st.advance(shard, at, f.RetentionMs, f.Policy)
	if forgot > 0 {
		f.expired.Inc(ctx, int64(forgot))
	}
	if compact {
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
	}
	f.entries.Update(ctx, int64(st.ids.n))
	return f.save(ctx, sp, shard, st)
}

func newCacheID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
