package transforms

import (
	"encoding/binary"
	"fmt"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

// shardState is the whole state of one dedup shard or watermark gate key.
type shardState struct {
	// known is the pipeline watermark as far as the key knows: on a gate key
	// the largest boundary timer fired, on a dedup shard the largest stamp.
	known int64
	// armed holds the windows (by start) whose timers a gate key set.
	armed map[int64]bool
	// ids maps each remembered id (128-bit hash) to the counted copy's
	// fingerprint and window.
	ids idTable
	// stored counts the bag's entries, live or expired (compactionDue).
	stored int

	// Position order's Pending bag (dedup_order.go).
	nextSeq  uint64
	releases []release
	pending  pendingState
}

// Judgement is dedup's verdict on one event and, for a conflict, the counted
// copy's fingerprint (First); id and window name what a counted one added.
type Judgement struct {
	Verdict event.Verdict
	First   uint64
	id      idKey
	window  int64
}

// Judge gives one event that passed validation and both rules of the
// too-late gate its dedup verdict; a counted event is remembered.
func (st *shardState) Judge(e *model.Event, p triggers.Policy) Judgement {
	start := p.WindowStart(e.EventTime)
	k := hashID(e.EventID)
	if prev, ok := st.ids.get(k); ok {
		if prev == e.Fingerprint {
			return Judgement{Verdict: event.Duplicate}
		}
		return Judgement{Verdict: event.Conflict, First: prev}
	}
	st.ids.put(k, e.Fingerprint, windowIndex(start, p))
	return Judgement{Verdict: event.Counted, id: k, window: start}
}

// windowIndex numbers windows (mod 2^32: the remembered ones span far fewer).
func windowIndex(start int64, p triggers.Policy) uint32 {
	return uint32(p.WindowIndex(start))
}

// expiredBefore is the index of the first window whose ids are still
// remembered: a window's ids go together once window_end + retention passed
// (SPEC §2), after its close, so a later copy is too late before any lookup.
func expiredBefore(known, retentionMs int64, p triggers.Policy) uint32 {
	// window_end + retention <= known  <=>  start <= known - retention - window
	return windowIndex(known-retentionMs-p.Window.Milliseconds(), p) + 1
}

func windowExpired(win, before uint32) bool { return int32(win-before) < 0 }

// Expire forgets the ids of every window whose retention the known watermark
// has passed, returning how many.
func (st *shardState) Expire(retentionMs int64, p triggers.Policy) int {
	if st.known == model.NoWatermark || st.ids.n == 0 {
		return 0
	}
	before := expiredBefore(st.known, retentionMs, p)
	return st.ids.filter(func(win uint32) bool { return !windowExpired(win, before) })
}

// Forgot reports whether the ids of eventTime's window expired: the shard can
// no longer tell a copy from a first (dedupFn.judge).
func (st *shardState) Forgot(eventTime, retentionMs int64, p triggers.Policy) bool {
	return st.known != model.NoWatermark &&
		windowExpired(windowIndex(p.WindowStart(eventTime), p), expiredBefore(st.known, retentionMs, p))
}

// NeedsCompaction reports whether most of the bag is expired ids: the cap
// that keeps compaction's cost proportional to the ids added.
func (st *shardState) NeedsCompaction() bool { return st.stored > 2*st.ids.n }

// compactionDue reports whether shard rewrites its ids bag as its known
// watermark moves from prev to at: at the cap, or when a boundary in (prev, at]
// falls in its slot (window index = shard mod P, the retention in windows) and
// any of the bag is dead. The slots spread compaction over the shards (with the
// cap alone all rewrote in the same hour: docs/capacity.md); it rewrites live
// ids only, so it never changes a verdict.
func (st *shardState) compactionDue(shard int, prev, at, retentionMs int64, p triggers.Policy) bool {
	if st.NeedsCompaction() {
		return true
	}
	if st.stored <= st.ids.n {
		return false
	}
	slots := max(1, retentionMs/p.Window.Milliseconds()) // P: the retention in whole windows
	hi := p.WindowIndex(at)
	lo := hi - slots
	if prev != model.NoWatermark {
		lo = max(lo, p.WindowIndex(prev))
	}
	for i := lo + 1; i <= hi; i++ {
		if ((i%slots)+slots)%slots == int64(shard)%slots {
			return true
		}
	}
	return false
}

// advance moves the known watermark to at (when later), forgetting the ids
// whose retention passed; it returns how many, and whether to compact now.
func (st *shardState) advance(shard int, at, retentionMs int64, p triggers.Policy) (forgot int, compact bool) {
	if at <= st.known {
		return 0, false
	}
	prev := st.known
	st.known = at
	if prev == model.NoWatermark || expiredBefore(st.known, retentionMs, p) != expiredBefore(prev, retentionMs, p) {
		forgot = st.Expire(retentionMs, p)
	}
	return forgot, st.compactionDue(shard, prev, at, retentionMs, p)
}

// A shard is stored in two parts, so a batch costs a few State API round trips
// whatever it holds: meta, one small value (a token every write changes, the
// known watermark, the armed windows), and ids, a bag of blobs a batch appends
// one to without reading. The decoded ids are cached between bundles
// (dedup_cache.go), trusted only while the token matches: a retry, a moved key
// or a restore changes or rolls it back.

// DedupStateBytesPerID is what one remembered id costs in the runner's
// state (measured by BenchmarkStateBytesPerID and cmd/scale).
const DedupStateBytesPerID = idEntryBytes

const (
	idEntryBytes    = 16 + 8
	compactChunkIDs = 1 << 16 // 1.5 MiB a blob
)

// decodeMeta decodes a shard's meta (empty: nothing stored yet) and its write
// token (0 then); the known watermark is at least start. By value: a cache hit
// keeps only the token and watermark.
func decodeMeta(b []byte, start int64) (token uint64, st shardState, err error) {
	// Nothing stored: the Pending bag is known empty; else it is read when a release needs it.
	st = shardState{known: start, armed: map[int64]bool{}, pending: pendingState{loaded: len(b) == 0}}
	if len(b) == 0 {
		return 0, st, nil
	}
	r := coders.Reader{B: b}
	token = r.Fixed64()
	st.known = max(r.Varint(), start)
	n := r.Uvarint()
	for i := uint64(0); i < n && r.Err == nil; i++ {
		st.armed[r.Varint()] = true
	}
	if len(r.B) > 0 { // written since the Pending bag's sequence numbers
		st.nextSeq = r.Uvarint()
		n = r.Uvarint()
		for i := uint64(0); i < n && r.Err == nil; i++ {
			st.releases = append(st.releases, release{seq: r.Uvarint(), at: r.Varint()})
		}
	}
	if r.Err != nil {
		return 0, shardState{}, fmt.Errorf("dedup: decode shard meta: %w", r.Err)
	}
	return token, st, nil
}

func encodeMeta(token uint64, st *shardState) []byte {
	w := coders.Writer{B: make([]byte, 0, 20+8*len(st.armed))}
	w.Fixed64(token)
	w.Varint(st.known)
	w.Uvarint(uint64(len(st.armed)))
	for start := range st.armed {
		w.Varint(start)
	}
	w.Uvarint(st.nextSeq)
	w.Uvarint(uint64(len(st.releases)))
	for _, r := range st.releases {
		w.Uvarint(r.seq)
		w.Varint(r.at)
	}
	return w.B
}

// An ids blob is a 0 byte (the format mark), then per window its start, its
// number of ids and idEntryBytes per id (128-bit hash, fingerprint): one blob
// a batch, as the Go SDK makes two round trips per append. Blobs of the older
// one-window format still load.
const idBlobMark = 0

// idBlobs accumulates the ids a batch counted, per window, for one blob.
type idBlobs struct {
	order []int64
	by    map[int64]*coders.Writer
	n     int // entries
}

func (b *idBlobs) add(window int64, k idKey, fp uint64) {
	if b.by == nil {
		b.by = map[int64]*coders.Writer{}
	}
	w, ok := b.by[window]
	if !ok {
		w = &coders.Writer{}
		b.by[window] = w
		b.order = append(b.order, window)
	}
	b.n++
	w.Fixed64(k.lo)
	w.Fixed64(k.hi)
	w.Fixed64(fp)
}

// blob returns the encoded entry (nil for no id), sections in window arrival order.
func (b *idBlobs) blob() []byte {
	if b.n == 0 {
		return nil
	}
	size := 1
	for _, win := range b.order {
		size += 20 + len(b.by[win].B)
	}
	w := coders.Writer{B: make([]byte, 0, size)}
	w.B = append(w.B, idBlobMark)
	for _, win := range b.order {
		w.Varint(win)
		w.Uvarint(uint64(len(b.by[win].B) / idEntryBytes))
		w.B = append(w.B, b.by[win].B...)
	}
	return w.B
}

// idSection is one window's ids in a blob.
type idSection struct {
	start   int64
	entries []byte // idEntryBytes per id
}

func idSections(blob []byte) ([]idSection, error) {
	r := coders.Reader{B: blob}
	if len(blob) == 0 || blob[0] != idBlobMark {
		// The format before sections: one window, then its ids.
		start := r.Varint()
		if r.Err != nil || len(r.B)%idEntryBytes != 0 {
			return nil, fmt.Errorf("dedup: decode shard ids: blob of %d bytes is not a window of ids", len(blob))
		}
		return []idSection{{start: start, entries: r.B}}, nil
	}
	r.B = r.B[1:]
	var out []idSection
	for len(r.B) > 0 {
		start, n := r.Varint(), r.Uvarint()
		if r.Err != nil || n > uint64(len(r.B)/idEntryBytes) {
			return nil, fmt.Errorf("dedup: decode shard ids: a section of %d ids in a blob of %d bytes", n, len(blob))
		}
		size := int(n) * idEntryBytes
		out = append(out, idSection{start: start, entries: r.B[:size]})
		r.B = r.B[size:]
	}
	return out, nil
}

// loadIDs counts every bag entry in stored and remembers the ids whose
// retention has not passed; expired windows' sections are skipped undecoded.
func (st *shardState) loadIDs(blobs [][]byte, p triggers.Policy, retentionMs int64) error {
	var sections []idSection
	total := 0
	for _, blob := range blobs {
		secs, err := idSections(blob)
		if err != nil {
			return err
		}
		for _, s := range secs {
			total += len(s.entries) / idEntryBytes
		}
		sections = append(sections, secs...)
	}
	if st.ids.n == 0 {
		st.ids = newIDTable(total)
	}
	before := expiredBefore(st.known, retentionMs, p)
	for _, s := range sections {
		n := len(s.entries) / idEntryBytes
		st.stored += n
		win := windowIndex(s.start, p)
		if st.known != model.NoWatermark && windowExpired(win, before) {
			continue
		}
		for i := 0; i < n; i++ {
			e := s.entries[i*idEntryBytes:]
			k := idKey{lo: binary.LittleEndian.Uint64(e), hi: binary.LittleEndian.Uint64(e[8:])}
			st.ids.put(k, binary.LittleEndian.Uint64(e[16:]), win)
		}
	}
	return nil
}

// compact returns the live ids as the bag's new blobs, which then is all it
// stores: one window a blob, at most compactChunkIDs ids each.
func (st *shardState) compact(p triggers.Policy) [][]byte {
	st.stored = st.ids.n
	open := map[uint32]*idBlobs{}
	var out [][]byte
	st.ids.each(func(k idKey, fp uint64, wi uint32) {
		c := open[wi]
		if c == nil {
			c = &idBlobs{}
			open[wi] = c
		}
		c.add(st.windowStartOf(wi, p), k, fp)
		if c.n == compactChunkIDs {
			out = append(out, c.blob())
			delete(open, wi)
		}
	})
	for _, c := range open {
		out = append(out, c.blob())
	}
	return out
}

// windowStartOf undoes windowIndex's mod 2^32 next to the known watermark
// (remembered windows lie within 2^31 windows of it).
func (st *shardState) windowStartOf(wi uint32, p triggers.Policy) int64 {
	var ref int64
	if st.known != model.NoWatermark {
		ref = p.WindowIndex(st.known)
	}
	return (ref + int64(int32(wi-uint32(ref)))) * p.Window.Milliseconds()
}

// newShardState is a shard that has stored nothing, its watermark at known.
func newShardState(known int64) *shardState {
	_, st, _ := decodeMeta(nil, known)
	return &st
}
