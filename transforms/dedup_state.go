package transforms

import (
	"fmt"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

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
	// armed lists the windows (by start) whose end, close and expiry timers
	// are set, so a batch sets each window's timers once.
	armed map[int64]bool
	ids   map[string]idEntry
}

// Verdict is what dedup decides for one event.
type Verdict uint8

const (
	// CountVerdict: the first copy of its event_id; it is counted.
	CountVerdict Verdict = iota + 1
	// DuplicateVerdict: an identical copy; dropped and counted as duplicate.
	DuplicateVerdict
	// ConflictVerdict: same id, different fingerprint; conflict output.
	ConflictVerdict
	// TooLateVerdict: rule (b): the window closed where it is judged.
	TooLateVerdict
)

// Judgement is a verdict plus, for a conflict, the counted copy's fingerprint.
type Judgement struct {
	Verdict Verdict
	First   uint64
}

// Judge applies SPEC §4's order to one event that passed validation and rule
// (a): rule (b) of the too-late gate, then dedup. A counted event is
// remembered and gets AfterEnd set when the shard knows the watermark passed
// its window end.
func (st *shardState) Judge(e *model.Event, p triggers.Policy) Judgement {
	start := p.WindowStart(e.EventTime)
	if p.Closed(start, st.known) {
		return Judgement{Verdict: TooLateVerdict}
	}
	if prev, ok := st.ids[e.EventID]; ok {
		if prev.fingerprint == e.Fingerprint {
			return Judgement{Verdict: DuplicateVerdict}
		}
		return Judgement{Verdict: ConflictVerdict, First: prev.fingerprint}
	}
	st.ids[e.EventID] = idEntry{eventTime: e.EventTime, fingerprint: e.Fingerprint}
	e.AfterEnd = st.known != model.NoWatermark && p.WindowEnd(start) <= st.known
	return Judgement{Verdict: CountVerdict}
}

// Expire forgets ids whose retention (event time + retention) the known
// watermark has passed, returning how many. Their windows are closed by then
// (retention >= window + lateness), so a later copy is judged too late
// before dedup ever looks it up.
func (st *shardState) Expire(retentionMs int64) int {
	n := 0
	for id, e := range st.ids {
		if e.eventTime+retentionMs <= st.known {
			delete(st.ids, id)
			n++
		}
	}
	return n
}

func decodeShard(b []byte, start int64) (*shardState, error) {
	st := &shardState{known: start, armed: map[int64]bool{}, ids: map[string]idEntry{}}
	if len(b) == 0 {
		return st, nil
	}
	r := coders.Reader{B: b}
	st.known = max(r.Varint(), start)
	na := r.Uvarint()
	for i := uint64(0); i < na && r.Err == nil; i++ {
		st.armed[r.Varint()] = true
	}
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
	w.Uvarint(uint64(len(st.armed)))
	for start := range st.armed {
		w.Varint(start)
	}
	w.Uvarint(uint64(len(st.ids)))
	for id, e := range st.ids {
		w.String(id)
		w.Varint(e.eventTime)
		w.Fixed64(e.fingerprint)
	}
	return w.B
}
