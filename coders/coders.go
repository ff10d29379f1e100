package coders

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
)

// Each DecodeX below is EncodeX's inverse and refuses trailing bytes (Done).
func init() {
	Register(EncodeRecord, DecodeRecord)
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

// writeEvent writes an event of a batch against the batch's previous event p: dims, partition,
// position and the ref's path front-coded, the times and the ref's offset as differences (one
// partition's events share long prefixes and lie close in time). AfterEnd and PipelineWatermark
// are the batch's Watermark's (model.EventBatch).
func writeEvent(w *Writer, v, p *model.Event) {
	w.String(v.EventID)
	w.Varint(v.EventTime - p.EventTime)
	w.String(v.UserID)
	w.Varint(v.AmountMicros)
	w.FrontString(p.Dims, v.Dims)
	w.Fixed64(v.Fingerprint)
	w.FrontString(p.Partition, v.Partition)
	w.FrontString(p.Position, v.Position)
	w.Bytes(v.Payload)
	w.FrontString(p.Ref.Path, v.Ref.Path)
	w.Varint(v.Ref.Offset - p.Ref.Offset)
	w.Uvarint(uint64(v.Ref.Length))
	w.Varint(v.ReadAt - p.ReadAt)
	w.Varint(v.WatermarkBefore - p.WatermarkBefore)
}

// readEvent reads what writeEvent wrote with the same p. The differences wrap as they were
// taken (two's complement), so any pair of times decodes exactly.
func readEvent(r *Reader, p *model.Event) model.Event {
	return model.Event{
		EventID: r.String(), EventTime: p.EventTime + r.Varint(), UserID: r.String(), AmountMicros: r.Varint(),
		Dims: r.FrontString(p.Dims), Fingerprint: r.Fixed64(), Partition: r.FrontString(p.Partition),
		Position: r.FrontString(p.Position), Payload: r.Bytes(),
		Ref:    model.LineRef{Path: r.FrontString(p.Ref.Path), Offset: p.Ref.Offset + r.Varint(), Length: int(r.Uvarint())},
		ReadAt: p.ReadAt + r.Varint(), WatermarkBefore: p.WatermarkBefore + r.Varint(),
	}
}

// writeRef writes a line ref outside an event (writeEvent codes its own).
func writeRef(w *Writer, v model.LineRef) {
	w.FrontString("", v.Path)
	w.Varint(v.Offset)
	w.Uvarint(uint64(v.Length))
}

func readRef(r *Reader) model.LineRef {
	return model.LineRef{Path: r.FrontString(""), Offset: r.Varint(), Length: int(r.Uvarint())}
}

// EncodeEventBatch encodes a batch's header, then its events, each against the
// one before (Coded as it is: a step that passes events on codes none again).
func EncodeEventBatch(v model.EventBatch) []byte {
	w := Writer{B: make([]byte, 0, 32+len(v.Coded)+64*len(v.Events))}
	writeStarts(&w, v.Windows)
	writeStarts(&w, v.Spans)
	w.Varint(v.Since)
	w.Varint(v.Watermark)
	if v.Coded != nil {
		w.Uvarint(uint64(v.N))
		return append(w.B, v.Coded...)
	}
	w.Uvarint(uint64(len(v.Events)))
	events := EventsWriter{w: w} // coded after the header, in place
	for i := range v.Events {
		events.Add(&v.Events[i])
	}
	return events.w.B
}

// EventsWriter codes a batch's events as they come, each against the one
// before: Admit keeps its batches coded until they leave (model.EventBatch.Coded).
type EventsWriter struct {
	w    Writer
	prev model.Event
	n    int
}

// Grow makes room for n more events of about size bytes each.
func (b *EventsWriter) Grow(n, size int) { b.w.B = slices.Grow(b.w.B, n*size) }

// Add codes e after the events added before it.
func (b *EventsWriter) Add(e *model.Event) {
	writeEvent(&b.w, e, &b.prev)
	b.prev = *e
	b.n++
}

// Coded returns the coded events and how many they are (nil for none).
func (b *EventsWriter) Coded() ([]byte, int) {
	if b.n == 0 {
		return nil, 0
	}
	return b.w.B, b.n
}

// DecodeEventBatch decodes a batch's header and leaves its events coded
// (Coded, N) for BatchEvents: the watermark gate passes most batches on
// without reading their events.
func DecodeEventBatch(b []byte) (model.EventBatch, error) {
	r := Reader{B: b}
	var v model.EventBatch
	v.Windows = readStarts(&r)
	v.Spans = readStarts(&r)
	v.Since, v.Watermark = r.Varint(), r.Varint()
	v.N = r.Count(1)
	if v.N == 0 || r.Err != nil {
		return Done(v, &r, "event batch")
	}
	v.Coded = r.B // the SDK decodes every element from a buffer of its own
	return v, nil
}

// writeStarts writes a list of window starts; readStarts reads it.
func writeStarts(w *Writer, starts []int64) {
	w.Uvarint(uint64(len(starts)))
	for _, start := range starts {
		w.Varint(start)
	}
}

func readStarts(r *Reader) []int64 {
	n := r.Count(1)
	if n == 0 {
		return nil
	}
	starts := make([]int64, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		starts = append(starts, r.Varint())
	}
	return starts
}

// BatchEvents returns a batch's events, decoding them when they are coded.
// The events' AfterEnd and PipelineWatermark are the batch's to set.
func BatchEvents(b model.EventBatch) ([]model.Event, error) {
	if b.Coded == nil {
		return b.Events, nil
	}
	r := Reader{B: b.Coded}
	events := make([]model.Event, 0, b.N)
	var prev model.Event
	for i := 0; i < b.N && r.Err == nil; i++ {
		prev = readEvent(&r, &prev)
		events = append(events, prev)
	}
	return Done(events, &r, "batch events")
}

func EncodeDelta(v model.Delta) []byte {
	w := Writer{B: make([]byte, 0, 20)}
	w.Varint(v.RevenueMicros)
	w.Varint(v.Count)
	w.Bool(v.AfterEnd)
	w.Bool(v.Tick)
	return w.B
}

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

func EncodeRow(v model.Row) []byte {
	w := Writer{B: make([]byte, 0, 48+len(v.Dims))}
	WriteRow(&w, &v)
	return w.B
}

func DecodeRow(b []byte) (model.Row, error) {
	r := Reader{B: b}
	return Done(ReadRow(&r), &r, "row")
}

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

func DecodeTooLate(b []byte) (model.TooLate, error) {
	r := Reader{B: b}
	v := model.TooLate{Position: r.String(), EventID: r.String(), EventTime: r.Varint(), Payload: r.Bytes(), Reason: r.String(), Ref: readRef(&r)}
	return Done(v, &r, "too-late record")
}

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

func DecodeConflict(b []byte) (model.Conflict, error) {
	r := Reader{B: b}
	v := model.Conflict{Position: r.String(), EventID: r.String(), FirstFingerprint: r.Fixed64(), ConflictingFingerprint: r.Fixed64(), Payload: r.Bytes(), Ref: readRef(&r)}
	return Done(v, &r, "conflict record")
}

func EncodeQuarantined(v model.Quarantined) []byte {
	w := Writer{}
	w.String(v.Position)
	w.Bytes(v.Payload)
	w.String(v.Reason)
	w.String(v.Detail)
	return w.B
}

func DecodeQuarantined(b []byte) (model.Quarantined, error) {
	r := Reader{B: b}
	v := model.Quarantined{Position: r.String(), Payload: r.Bytes(), Reason: r.String(), Detail: r.String()}
	return Done(v, &r, "quarantined record")
}
