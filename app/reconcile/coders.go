package reconcile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unique"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/coders"
)

// Hand-written coders, as in package coders: copy batches dominate the shuffle.
func init() {
	beam.RegisterCoder(reflect.TypeOf((*copyBatch)(nil)).Elem(), encodeCopyBatch, decodeCopyBatch)
	beam.RegisterCoder(reflect.TypeOf((*Totals)(nil)).Elem(), encodeTotals, decodeTotals)
	// Evidence (the stream's audit rows, far fewer than the copies), Stats and Comparison: JSON.
	beam.RegisterCoder(reflect.TypeOf((*evidenceBatch)(nil)).Elem(), encodeEvidenceBatch, decodeEvidenceBatch)
	beam.RegisterCoder(reflect.TypeOf((*Stats)(nil)).Elem(), encodeStats, decodeStats)
	beam.RegisterCoder(reflect.TypeOf((*Comparison)(nil)).Elem(), encodeComparison, decodeComparison)
}

// copyBatch carries one shard's copies from a partition read to the choice.
type copyBatch struct {
	Copies []Copy
}

// evidenceBatch carries the stream's verdicts about one shard's ids.
type evidenceBatch struct {
	Shard     int
	Conflicts []streamConflict
	// TooLate holds positions of too_late_events rows.
	TooLate []string
}

// streamConflict is the part of a conflict_events row the choice needs.
type streamConflict struct {
	EventID, Position string
	FirstFingerprint  uint64
}

func encodeCopyBatch(b copyBatch) []byte {
	w := coders.Writer{B: make([]byte, 0, 64*len(b.Copies)+4)}
	w.Uvarint(uint64(len(b.Copies)))
	for i := range b.Copies {
		c := &b.Copies[i]
		w.String(c.EventID)
		w.String(c.Position)
		w.Fixed64(c.Fingerprint)
		w.Varint(c.WindowStart)
		w.String(c.Dims)
		w.Varint(c.AmountMicros)
	}
	return w.B
}

func decodeCopyBatch(data []byte) (copyBatch, error) {
	r := coders.Reader{B: data}
	n := r.Count(13)
	b := copyBatch{Copies: make([]Copy, 0, n)}
	for i := 0; i < n && r.Err == nil; i++ {
		// Dims repeat across a batch: share one string per distinct value.
		b.Copies = append(b.Copies, Copy{EventID: r.String(), Position: r.String(), Fingerprint: r.Fixed64(), WindowStart: r.Varint(),
			Dims: unique.Make(r.String()).Value(), AmountMicros: r.Varint()})
	}
	return coders.Done(b, &r, "copy batch")
}

func encodeTotals(t Totals) []byte {
	w := coders.Writer{B: make([]byte, 0, 24)}
	w.Varint(t.RevenueMicros)
	w.Varint(t.Count)
	w.Varint(t.TooLateRevenueMicros)
	w.Varint(t.TooLateCount)
	return w.B
}

func decodeTotals(data []byte) (Totals, error) {
	r := coders.Reader{B: data}
	t := Totals{RevenueMicros: r.Varint(), Count: r.Varint(), TooLateRevenueMicros: r.Varint(), TooLateCount: r.Varint()}
	return coders.Done(t, &r, "totals")
}

// Named functions, not generic ones: Beam resolves coder functions by name on the workers.
func encodeEvidenceBatch(b evidenceBatch) ([]byte, error) { return json.Marshal(b) }
func decodeEvidenceBatch(b []byte) (evidenceBatch, error) {
	return decodeJSON[evidenceBatch](b, "evidence batch")
}
func encodeStats(s Stats) ([]byte, error)           { return json.Marshal(s) }
func decodeStats(b []byte) (Stats, error)           { return decodeJSON[Stats](b, "stats") }
func encodeComparison(c Comparison) ([]byte, error) { return json.Marshal(c) }
func decodeComparison(b []byte) (Comparison, error) { return decodeJSON[Comparison](b, "comparison") }

func decodeJSON[T any](data []byte, what string) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
