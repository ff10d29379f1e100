package reconcile

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/transforms"
)

func TestCodersRoundTrip(t *testing.T) {
	cb := copyBatch{Copies: []Copy{
		{EventID: "a", Position: "p0/f:1", Fingerprint: 1<<64 - 1, WindowStart: -3_600_000, Dims: "{}", AmountMicros: -5},
		{EventID: "é", Position: "pubsub:9", Fingerprint: 7, WindowStart: 1 << 40, Dims: `{"c":"x"}`, AmountMicros: 1<<62 + 1, Future: true},
	}}
	if got, err := decodeCopyBatch(encodeCopyBatch(cb)); err != nil || !reflect.DeepEqual(got, cb) {
		t.Errorf("copy batch: %+v, %v", got, err)
	}
	eb := evidenceBatch{Shard: 3, Conflicts: []streamConflict{{EventID: "a", Position: "p0/f:2", FirstFingerprint: 9}}, TooLate: []string{"p0/f:3"}}
	eBytes, _ := encodeEvidenceBatch(eb)
	if got, err := decodeEvidenceBatch(eBytes); err != nil || !reflect.DeepEqual(got, eb) {
		t.Errorf("evidence batch: %+v, %v", got, err)
	}
	tt := Totals{RevenueMicros: -1, Count: 2, TooLateRevenueMicros: 3, TooLateCount: 4, Future: []int64{-2, 5}}
	if got, err := decodeTotals(encodeTotals(tt)); err != nil || !reflect.DeepEqual(got, tt) {
		t.Errorf("totals: %+v, %v", got, err)
	}
	st := Stats{Read: 5, Quarantined: map[string]int64{"oversized": 1}, LogWatermark: -7, HasLogWatermark: true, Unterminated: []string{"p0/f:9"}}
	b, _ := encodeStats(st)
	if got, err := decodeStats(b); err != nil || !reflect.DeepEqual(got, st) {
		t.Errorf("stats: %+v, %v", got, err)
	}
	// Corrupt input fails instead of allocating or panicking.
	for _, bad := range [][]byte{{0xff, 0xff, 0xff, 0xff, 0x0f}, encodeCopyBatch(cb)[:10], append(encodeTotals(tt), 0)} {
		if _, err := decodeCopyBatch(bad); err == nil {
			t.Errorf("decodeCopyBatch(%x) did not fail", bad)
		}
	}
}

func TestStatsMerge(t *testing.T) {
	a := Stats{Read: 1, Quarantined: map[string]int64{"x": 1}, LogWatermark: 10, HasLogWatermark: true}
	b := Stats{Read: 2, Quarantined: map[string]int64{"x": 2, "y": 1}}
	c := Stats{LogWatermark: 5, HasLogWatermark: true}
	got := a.Merge(b).Merge(c)
	if got.Read != 3 || got.Quarantined["x"] != 3 || got.Quarantined["y"] != 1 || got.LogWatermark != 5 || !got.HasLogWatermark {
		t.Errorf("merge = %+v", got)
	}
	if a.Quarantined["x"] != 1 {
		t.Error("Merge modified its receiver's map")
	}
}

func TestEvidenceBatches(t *testing.T) {
	if b := evidenceBatches(nil, nil, 4); len(b) != 0 {
		t.Errorf("no audit rows: %d batches", len(b))
	}
	// Every item lands in the shard of its event id, in bounded batches.
	var late []model.TooLate
	var conflicts []model.Conflict
	for i := range 3 * evidenceItems {
		id := fmt.Sprint("id", i)
		late = append(late, model.TooLate{EventID: id, Position: fmt.Sprint("p0/f:", i+1)})
		if i%100 == 0 {
			conflicts = append(conflicts, model.Conflict{EventID: id, Position: fmt.Sprint("p1/f:", i+1), FirstFingerprint: uint64(i)})
		}
	}
	items := 0
	for _, b := range evidenceBatches(conflicts, late, 2) {
		if n := len(b.Conflicts) + len(b.TooLate); n > evidenceItems || n == 0 {
			t.Errorf("batch of %d items", n)
		}
		for _, c := range b.Conflicts {
			if transforms.ShardOf(c.EventID, 2) != b.Shard {
				t.Errorf("conflict %s in shard %d", c.EventID, b.Shard)
			}
		}
		items += len(b.Conflicts) + len(b.TooLate)
	}
	if items != len(late)+len(conflicts) {
		t.Errorf("%d items batched, want %d", items, len(late)+len(conflicts))
	}
}
