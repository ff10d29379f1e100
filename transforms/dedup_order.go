package transforms

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

// Deterministic first copy (DedupOptions.ByPosition).
//
// Prism delivers a key's elements in timestamp, then arrival order; Flink
// keeps one channel's order but not across a rescale; Dataflow promises none.
// So a batch waits in the Pending bag until the watermark passes its timestamp
// (a release timer), and released events are judged in (timestamp, partition,
// file, line) order, at the price of the skew between partitions, one more bag
// write and read and a timer per batch. The shard forgets ids only as release
// timers fire (releaseClock), so never while a held copy needs one.

const tagRelease = 'r' // just after a held batch's wait (see hold): release it

// The Pending bag is only appended to, and rewritten once its released entries
// weigh as much as those held: a held batch costs one append and on average at
// most one rewrite, however long a lagging partition holds it. The meta records
// which entries were released as (next sequence number, release time) pairs.
// Bag and value state only: Flink's portable runner has no MapState for Go
// (test/integration/integration.go).

// maxReleases bounds the meta's release pairs: past it the bag is rewritten.
const maxReleases = 16

// heldBatch is a Pending bag entry: its wait, sequence number and bytes.
type heldBatch struct {
	until int64
	seq   uint64
	blob  []byte
}

// heldHeap is a min-heap of held batches by (until, seq) (container/heap).
type heldHeap []heldBatch

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	return h[i].until < h[j].until || h[i].until == h[j].until && h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(heldBatch)) }
func (h *heldHeap) Pop() any {
	b := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return b
}

// release records in the meta that the entries before sequence number seq
// waiting for a time before at were released.
type release struct {
	seq uint64
	at  int64
}

// pendingState is the decoded Pending bag of a shard.
type pendingState struct {
	loaded bool     // the fields below mirror the bag (else the next release reads it)
	held   heldHeap // the entries still waiting
	// heldBytes and releasedBytes weigh the entries held and those released
	// but still in the bag.
	heldBytes, releasedBytes int64
}

func (p *pendingState) push(b heldBatch) {
	heap.Push(&p.held, b)
	p.heldBytes += int64(len(b.blob))
}

func (p *pendingState) pop() heldBatch {
	top := heap.Pop(&p.held).(heldBatch)
	p.heldBytes -= int64(len(top.blob))
	p.releasedBytes += int64(len(top.blob))
	return top
}

// released reports whether a recorded release took the entry (until, seq).
func (st *shardState) released(until int64, seq uint64) bool {
	return slices.ContainsFunc(st.releases, func(r release) bool { return r.seq > seq && r.at > until })
}

// heldBatches is where a keyed step holds batches: the Pending bag, and the
// timer family whose release timers (tagRelease) free them. The gate holds a
// batch until a boundary (heldFor), position-order dedup until the watermark
// passes the batch's timestamp.
type heldBatches struct {
	bag   state.Bag[[]byte]
	timer timers.EventTime
}

// hold stores a batch and sets its release timer just after until. Its windows
// were armed before, not at the release: a timer set from OnTimer after the
// watermark passed it stalls prism v2.77.0.
func (h heldBatches) hold(sp state.Provider, tp timers.Provider, st *shardState, batch model.EventBatch, until int64) error {
	w := coders.Writer{B: []byte{heldFormat}}
	w.Varint(until)
	w.Uvarint(st.nextSeq)
	w.B = append(w.B, coders.EncodeEventBatch(batch)...)
	if err := h.bag.Add(sp, w.B); err != nil {
		return fmt.Errorf("hold batch: %w", err)
	}
	if st.pending.loaded {
		st.pending.push(heldBatch{until: until, seq: st.nextSeq, blob: w.B})
	}
	st.nextSeq++
	// Fired just after until (prism fires a timer once the watermark reaches
	// it), holding the output at until: what it releases is stamped no later
	// than its events' timestamps, so a downstream timer at until+1 (the
	// revision step's FINAL when until is the close less 1 ms) cannot fire
	// before it arrives.
	setTimer(h.timer, tp, tagRelease, until+1, until)
	return nil
}

// heldFormat marks a Pending bag entry in the event batch coding of 2026-12-06
// (coders.EncodeEventBatch); an entry without it (an older savepoint) is
// refused, never misread.
const heldFormat = 1

// heldEntry reads what hold stored: the wait, sequence number, coded batch.
func heldEntry(b []byte) (until int64, seq uint64, batch []byte, err error) {
	if len(b) == 0 || b[0] != heldFormat {
		return 0, 0, nil, fmt.Errorf("held batch of another coding (a savepoint of an older build? docs/restart.md): start a new job")
	}
	r := coders.Reader{B: b[1:]}
	until, seq = r.Varint(), r.Uvarint()
	if r.Err != nil {
		return 0, 0, nil, fmt.Errorf("decode held batch: %w", r.Err)
	}
	return until, seq, r.B, nil
}

// batchTimestamp is the batch's element timestamp: its earliest eventTimestamp.
func batchTimestamp(events []model.Event) int64 {
	ts := int64(mtime.MaxTimestamp)
	for i := range events {
		ts = min(ts, eventTimestamp(&events[i]))
	}
	return ts
}

// eventTimestamp is the element timestamp the source gave an event's
// record: its partition's watermark before it.
func eventTimestamp(e *model.Event) int64 { return max(e.WatermarkBefore, int64(mtime.MinTimestamp)) }

// load decodes the Pending bag after a cache miss, keeping the entries no
// recorded release took.
func (h heldBatches) load(sp state.Provider, st *shardState) error {
	blobs, _, err := h.bag.Read(sp)
	if err != nil {
		return fmt.Errorf("read held batches: %w", err)
	}
	p := pendingState{loaded: true}
	for _, b := range blobs {
		until, seq, _, err := heldEntry(b)
		if err != nil {
			return err
		}
		if st.released(until, seq) {
			p.releasedBytes += int64(len(b))
			continue
		}
		p.push(heldBatch{until: until, seq: seq, blob: b})
	}
	st.pending = p
	return nil
}

// release takes the held batches whose wait ended before at and returns
// their events in position order.
func (h heldBatches) release(sp state.Provider, st *shardState, at int64, policy triggers.Policy) ([]model.Event, error) {
	if !st.pending.loaded {
		if err := h.load(sp, st); err != nil {
			return nil, err
		}
	}
	p := &st.pending
	var ready []model.Event
	for len(p.held) > 0 && p.held[0].until < at {
		_, _, coded, err := heldEntry(p.pop().blob)
		if err != nil {
			return nil, err
		}
		batch, err := coders.DecodeEventBatch(coded)
		if err != nil {
			return nil, fmt.Errorf("decode held batch: %w", err)
		}
		events, err := gatedEvents(batch, policy)
		if err != nil {
			return nil, fmt.Errorf("decode held batch: %w", err)
		}
		ready = append(ready, events...)
	}
	if len(ready) == 0 {
		return nil, nil // released by an earlier timer
	}
	// Record the release, dropping those it covers (smaller seq, no later at).
	st.releases = slices.DeleteFunc(st.releases, func(r release) bool { return r.at <= at })
	st.releases = append(st.releases, release{seq: st.nextSeq, at: at})
	if p.releasedBytes >= p.heldBytes || len(st.releases) > maxReleases {
		// Rewrite the bag with the held entries only: no dearer than the
		// appends of what was released.
		if err := h.bag.Clear(sp); err != nil {
			return nil, fmt.Errorf("clear held batches: %w", err)
		}
		for _, b := range p.held {
			if err := h.bag.Add(sp, b.blob); err != nil {
				return nil, fmt.Errorf("keep held batch: %w", err)
			}
		}
		p.releasedBytes = 0
		st.releases = nil
	}
	SortBySourcePosition(ready)
	return ready, nil
}

// SortBySourcePosition orders events by (timestamp, partition, file, line):
// within a partition that is the order the source read them in.
func SortBySourcePosition(events []model.Event) {
	slices.SortStableFunc(events, func(a, b model.Event) int {
		if c := cmp.Or(cmp.Compare(eventTimestamp(&a), eventTimestamp(&b)), strings.Compare(a.Partition, b.Partition)); c != 0 {
			return c
		}
		return comparePositions(a.Position, b.Position)
	})
}

// comparePositions compares "<partition>/<file>:<line>" positions by file,
// then line as a number; others (pubsub:<id>) as strings.
func comparePositions(a, b string) int {
	af, al, aok := splitPosition(a)
	bf, bl, bok := splitPosition(b)
	if !aok || !bok {
		return strings.Compare(a, b)
	}
	return cmp.Or(strings.Compare(af, bf), cmp.Compare(al, bl))
}

func splitPosition(p string) (string, int64, bool) {
	i := strings.LastIndexByte(p, ':')
	if i < 0 || strings.HasPrefix(p, "pubsub:") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(p[i+1:], 10, 64)
	return p[:i], n, err == nil
}
