package transforms

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
)

// Deterministic first copy (DedupOptions.ByPosition).
//
// Prism hands a key's elements to the dedup step in timestamp order, then
// arrival order, which within a partition is position order. Flink keeps
// the order of one upstream channel but not across a rescale, and Dataflow
// promises none: there, of two copies of an id from one partition, the one
// delivered first would count. ByPosition makes the choice independent of
// delivery: a batch waits in the Pending bag until the watermark passes its
// timestamp (a release timer at timestamp + 1), when every batch with an
// earlier or equal timestamp has arrived, and the released events are
// judged in (timestamp, partition, file, line) order. Within a partition
// timestamps never decrease along positions, so the earlier copy is judged
// first. Across partitions the order is still deterministic, and whichever
// copy counted is what conflict_events.first_fingerprint records.
//
// The price: an event waits for the watermark (the skew between partitions,
// not the out-of-order bound: a record's timestamp is its partition's
// watermark already), one more bag write and read, and a timer per batch.
// Records behind the watermark (a partition back from idle) are released at
// once, in the order they come.

const tagRelease = 'r' // just after a held batch's wait (see hold): release it

// hold stores a batch in the Pending bag and sets its release timer just
// after until: its timestamp (ByPosition), or a boundary it waits for (see
// heldFor). The windows of its events were armed before (armEvents), not
// at the release: a timer set from OnTimer after the watermark passed it
// stalls prism v2.77.0.
func (f *dedupFn) hold(sp state.Provider, tp timers.Provider, batch model.EventBatch, until int64) error {
	w := coders.Writer{}
	w.Varint(until)
	w.B = append(w.B, coders.EncodeEventBatch(batch)...)
	if err := f.Pending.Add(sp, w.B); err != nil {
		return fmt.Errorf("dedup: hold batch: %w", err)
	}
	f.Boundary.Set(tp, timeOf(until+1), timers.WithTag(string(rune(tagRelease))+strconv.FormatInt(until+1, 10)))
	return nil
}

// batchTimestamp is the batch's element timestamp: its earliest record's
// partition watermark, as the source stamped it.
func batchTimestamp(b model.EventBatch) int64 {
	ts := int64(mtime.MaxTimestamp)
	for _, e := range b.Events {
		ts = min(ts, max(e.WatermarkBefore, int64(mtime.MinTimestamp)))
	}
	return ts
}

// release takes the held batches whose wait ended before at out of the
// Pending bag and returns their events in position order.
func (f *dedupFn) release(sp state.Provider, at int64) ([]model.Event, error) {
	blobs, _, err := f.Pending.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("dedup: read held batches: %w", err)
	}
	var ready []model.Event
	var keep [][]byte
	for _, b := range blobs {
		r := coders.Reader{B: b}
		until := r.Varint()
		if r.Err != nil {
			return nil, fmt.Errorf("dedup: decode held batch: %w", r.Err)
		}
		if until >= at {
			keep = append(keep, b)
			continue
		}
		batch, err := coders.DecodeEventBatch(r.B)
		if err != nil {
			return nil, fmt.Errorf("dedup: decode held batch: %w", err)
		}
		ready = append(ready, batch.Events...)
	}
	if len(ready) == 0 {
		return nil, nil // released by an earlier timer
	}
	if err := f.Pending.Clear(sp); err != nil {
		return nil, fmt.Errorf("dedup: clear held batches: %w", err)
	}
	for _, b := range keep {
		if err := f.Pending.Add(sp, b); err != nil {
			return nil, fmt.Errorf("dedup: keep held batch: %w", err)
		}
	}
	SortBySourcePosition(ready)
	return ready, nil
}

// SortBySourcePosition orders events by (timestamp, partition, file, line):
// within a partition that is the order the source read them in.
func SortBySourcePosition(events []model.Event) {
	slices.SortStableFunc(events, func(a, b model.Event) int {
		if c := cmp.Compare(max(a.WatermarkBefore, int64(mtime.MinTimestamp)), max(b.WatermarkBefore, int64(mtime.MinTimestamp))); c != 0 {
			return c
		}
		if c := strings.Compare(a.Partition, b.Partition); c != 0 {
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
	if c := strings.Compare(af, bf); c != 0 {
		return c
	}
	return cmp.Compare(al, bl)
}

func splitPosition(p string) (string, int64, bool) {
	i := strings.LastIndexByte(p, ':')
	if i < 0 || strings.HasPrefix(p, "pubsub:") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(p[i+1:], 10, 64)
	return p[:i], n, err == nil
}
