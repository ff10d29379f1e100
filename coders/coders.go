package coders

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	Register(EncodeRecord, DecodeRecord)
	Register(EncodeEvent, DecodeEvent)
	Register(EncodeEventBatch, DecodeEventBatch)
	Register(EncodeDelta, DecodeDelta)
	Register(EncodeRow, DecodeRow)
	Register(EncodeTooLate, DecodeTooLate)
	Register(EncodeConflict, DecodeConflict)
	Register(EncodeQuarantined, DecodeQuarantined)
}

// Register registers enc and dec as Beam's coder of T, each with the SDK's
// generated caller: without one the SDK calls a coder through reflection,
// once per element (reflect.Value.Call).
func Register[T any](enc func(T) []byte, dec func([]byte) (T, error)) {
	register.Function1x1(enc)
	register.Function1x2(dec)
	beam.RegisterCoder(reflect.TypeOf((*T)(nil)).Elem(), enc, dec)
}

// Done returns v decoded from r, or an error naming what when r failed or
// has bytes left over.
func Done[T any](v T, r *Reader, what string) (T, error) {
	if r.Err == nil && len(r.B) != 0 {
		r.Err = fmt.Errorf("%d trailing bytes", len(r.B))
	}
	if r.Err != nil {
		var zero T
		return zero, fmt.Errorf("decode %s: %w", what, r.Err)
	}
	return v, nil
}

// EncodeRecord encodes a raw record with its verdict: of a valid event only
// the fields the record does not hold, of a rejection all of it.
func EncodeRecord(v model.Record) []byte {
	w := Writer{B: make([]byte, 0, len(v.Line)+len(v.Position)+len(v.Partition)+96)}
	w.String(v.Partition)
	w.String(v.Position)
	w.Bytes(v.Line)
	writeRef(&w, v.Ref)
	w.Bool(v.Oversized)
	w.Varint(v.ReadAt)
	w.Varint(v.WatermarkBefore)
	switch {
	case v.Valid != nil:
		e := v.Valid
		w.Uvarint(verdictValid)
		w.String(e.EventID)
		w.Varint(e.EventTime)
		w.String(e.UserID)
		w.Varint(e.AmountMicros)
		w.String(e.Dims)
		w.Fixed64(e.Fingerprint)
		w.Bool(e.AfterEnd)
	case v.Rejected != nil:
		q := v.Rejected
		w.Uvarint(verdictRejected)
		w.String(q.Reason)
		w.String(q.Detail)
		w.Bytes(q.Payload)
	default:
		w.Uvarint(verdictNone)
	}
	return w.B
}

// The verdict a record carries (model.Record.Valid, Rejected).
const (
	verdictNone = iota
	verdictValid
	verdictRejected
)

// DecodeRecord is the inverse of EncodeRecord.
func DecodeRecord(b []byte) (model.Record, error) {
	r := Reader{B: b}
	v := model.Record{Partition: r.String(), Position: r.String(), Line: r.Bytes(), Ref: readRef(&r), Oversized: r.Bool(), ReadAt: r.Varint(), WatermarkBefore: r.Varint()}
	switch k := r.Uvarint(); {
	case k == verdictValid:
		v.Valid = &model.Event{
			EventID: r.String(), EventTime: r.Varint(), UserID: r.String(), AmountMicros: r.Varint(),
			Dims: r.String(), Fingerprint: r.Fixed64(), AfterEnd: r.Bool(),
			Partition: v.Partition, Position: v.Position, Payload: v.Line, Ref: v.Ref, ReadAt: v.ReadAt, WatermarkBefore: v.WatermarkBefore,
		}
	case k == verdictRejected:
		v.Rejected = &model.Quarantined{Position: v.Position, Reason: r.String(), Detail: r.String(), Payload: r.Bytes()}
	case k != verdictNone && r.Err == nil:
		return model.Record{}, fmt.Errorf("decode record: unknown verdict %d", k)
	}
	return Done(v, &r, "record")
}

// noEvent stands for the previous event outside a batch.
var noEvent model.Event

// writeEvent writes an event; in a batch (prev not nil), against the previous event's: dims,
// partition, position and the ref's path front-coded (one partition's events share long
// prefixes), the times and the ref's offset as differences (one partition's events lie close in
// both). Outside a batch the previous event is the zero one, so both are written whole.
func writeEvent(w *Writer, v, prev *model.Event) {
	batch := prev != nil
	if !batch {
		prev = &noEvent // no copy of the previous event per event
	}
	p := prev
	w.String(v.EventID)
	w.Varint(v.EventTime - p.EventTime)
	w.String(v.UserID)
	w.Varint(v.AmountMicros)
	w.frontIf(batch, p.Dims, v.Dims)
	w.Fixed64(v.Fingerprint)
	w.frontIf(batch, p.Partition, v.Partition)
	w.frontIf(batch, p.Position, v.Position)
	w.Bytes(v.Payload)
	w.FrontString(p.Ref.Path, v.Ref.Path)
	w.Varint(v.Ref.Offset - p.Ref.Offset)
	w.Uvarint(uint64(v.Ref.Length))
	w.Varint(v.ReadAt - p.ReadAt)
	w.Varint(v.WatermarkBefore - p.WatermarkBefore)
	w.Bool(v.AfterEnd)
	w.Varint(v.PipelineWatermark - p.PipelineWatermark)
}

// readEvent reads what writeEvent wrote with the same prev. The differences wrap as they were
// taken (two's complement), so any pair of times decodes exactly.
func readEvent(r *Reader, prev *model.Event) model.Event {
	batch := prev != nil
	if !batch {
		prev = &noEvent
	}
	p := prev
	return model.Event{
		EventID: r.String(), EventTime: p.EventTime + r.Varint(), UserID: r.String(), AmountMicros: r.Varint(),
		Dims: r.frontIf(batch, p.Dims), Fingerprint: r.Fixed64(), Partition: r.frontIf(batch, p.Partition),
		Position: r.frontIf(batch, p.Position), Payload: r.Bytes(),
		Ref:    model.LineRef{Path: r.FrontString(p.Ref.Path), Offset: p.Ref.Offset + r.Varint(), Length: int(r.Uvarint())},
		ReadAt: p.ReadAt + r.Varint(), WatermarkBefore: p.WatermarkBefore + r.Varint(), AfterEnd: r.Bool(),
		PipelineWatermark: p.PipelineWatermark + r.Varint(),
	}
}

// writeRef writes a line ref (an event's is written against the previous one's).
func writeRef(w *Writer, v model.LineRef) {
	w.FrontString("", v.Path)
	w.Varint(v.Offset)
	w.Uvarint(uint64(v.Length))
}

func readRef(r *Reader) model.LineRef {
	return model.LineRef{Path: r.FrontString(""), Offset: r.Varint(), Length: int(r.Uvarint())}
}

// EncodeEvent encodes a validated event.
func EncodeEvent(v model.Event) []byte {
	w := Writer{B: make([]byte, 0, 64+len(v.Payload))}
	writeEvent(&w, &v, nil)
	return w.B
}

// DecodeEvent is the inverse of EncodeEvent.
func DecodeEvent(b []byte) (model.Event, error) {
	r := Reader{B: b}
	return Done(readEvent(&r, nil), &r, "event")
}

// EncodeEventBatch encodes a shard batch.
func EncodeEventBatch(v model.EventBatch) []byte {
	w := Writer{B: make([]byte, 0, 128*len(v.Events))}
	w.Uvarint(uint64(len(v.Events)))
	var prev model.Event
	for i := range v.Events {
		writeEvent(&w, &v.Events[i], &prev)
		prev = v.Events[i]
	}
	w.Uvarint(uint64(len(v.Windows)))
	for _, start := range v.Windows {
		w.Varint(start)
	}
	return w.B
}

func DecodeEventBatch(b []byte) (model.EventBatch, error) {
	r := Reader{B: b}
	n := r.Count(1)
	v := model.EventBatch{Events: make([]model.Event, 0, n)}
	var prev model.Event
	for i := 0; i < n && r.Err == nil; i++ {
		prev = readEvent(&r, &prev)
		v.Events = append(v.Events, prev)
	}
	m := r.Count(1)
	for i := 0; i < m && r.Err == nil; i++ {
		v.Windows = append(v.Windows, r.Varint())
	}
	return Done(v, &r, "event batch")
}

func EncodeDelta(v model.Delta) []byte {
	w := Writer{B: make([]byte, 0, 20)}
	w.Varint(v.RevenueMicros)
	w.Varint(v.Count)
	w.Bool(v.AfterEnd)
	w.Bool(v.Tick)
	return w.B
}

// DecodeDelta is the inverse of EncodeDelta.
func DecodeDelta(b []byte) (model.Delta, error) {
	r := Reader{B: b}
	v := model.Delta{RevenueMicros: r.Varint(), Count: r.Varint(), AfterEnd: r.Bool(), Tick: r.Bool()}
	return Done(v, &r, "delta")
}

// WriteRow appends a row (also used for revision state).
func WriteRow(w *Writer, v *model.Row) {
	w.Varint(v.WindowStart)
	w.Varint(v.WindowEnd)
	w.String(v.Dims)
	w.Varint(v.RevenueMicros)
	w.Varint(v.EventCount)
	w.Varint(v.Revision)
	w.Uvarint(uint64(v.State))
	w.String(v.Writer)
}

// ReadRow reads what WriteRow wrote.
func ReadRow(r *Reader) model.Row {
	return model.Row{
		WindowStart: r.Varint(), WindowEnd: r.Varint(), Dims: r.String(), RevenueMicros: r.Varint(),
		EventCount: r.Varint(), Revision: r.Varint(), State: model.ResultState(r.Uvarint()), Writer: r.String(),
	}
}

// EncodeRow encodes a snapshot row.
func EncodeRow(v model.Row) []byte {
	w := Writer{B: make([]byte, 0, 48+len(v.Dims))}
	WriteRow(&w, &v)
	return w.B
}

// DecodeRow is the inverse of EncodeRow.
func DecodeRow(b []byte) (model.Row, error) {
	r := Reader{B: b}
	return Done(ReadRow(&r), &r, "row")
}

// EncodeTooLate encodes a too-late audit record.
func EncodeTooLate(v model.TooLate) []byte {
	w := Writer{}
	w.String(v.Position)
	w.String(v.EventID)
	w.Varint(v.EventTime)
	w.Bytes(v.Payload)
	w.String(v.Reason)
	writeRef(&w, v.Ref)
	return w.B
}

// DecodeTooLate is the inverse of EncodeTooLate.
func DecodeTooLate(b []byte) (model.TooLate, error) {
	r := Reader{B: b}
	v := model.TooLate{Position: r.String(), EventID: r.String(), EventTime: r.Varint(), Payload: r.Bytes(), Reason: r.String(), Ref: readRef(&r)}
	return Done(v, &r, "too-late record")
}

// EncodeConflict encodes a conflict audit record.
func EncodeConflict(v model.Conflict) []byte {
	w := Writer{}
	w.String(v.Position)
	w.String(v.EventID)
	w.Fixed64(v.FirstFingerprint)
	w.Fixed64(v.ConflictingFingerprint)
	w.Bytes(v.Payload)
	writeRef(&w, v.Ref)
	return w.B
}

// DecodeConflict is the inverse of EncodeConflict.
func DecodeConflict(b []byte) (model.Conflict, error) {
	r := Reader{B: b}
	v := model.Conflict{Position: r.String(), EventID: r.String(), FirstFingerprint: r.Fixed64(), ConflictingFingerprint: r.Fixed64(), Payload: r.Bytes(), Ref: readRef(&r)}
	return Done(v, &r, "conflict record")
}

// EncodeQuarantined encodes a quarantined record.
func EncodeQuarantined(v model.Quarantined) []byte {
	w := Writer{}
	w.String(v.Position)
	w.Bytes(v.Payload)
	w.String(v.Reason)
	w.String(v.Detail)
	return w.B
}

// DecodeQuarantined is the inverse of EncodeQuarantined.
func DecodeQuarantined(b []byte) (model.Quarantined, error) {
	r := Reader{B: b}
	v := model.Quarantined{Position: r.String(), Payload: r.Bytes(), Reason: r.String(), Detail: r.String()}
	return Done(v, &r, "quarantined record")
}
