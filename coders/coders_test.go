package coders

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/revenue-stream/hourly/model"
)

func event(i int, partition string) model.Event {
	return model.Event{
		EventID: fmt.Sprintf("evt_%016x", i*7919), EventTime: 1793750215086 + int64(i), UserID: fmt.Sprint("u", i%97),
		AmountMicros: int64(i) * 10_000, Dims: `{"country":"JP"}`, Fingerprint: uint64(i) * 0x9e3779b97f4a7c15,
		Partition: partition, Position: fmt.Sprintf("%s/%06d.jsonl:%d", partition, 1+i/1000, 1+i%1000),
		Payload:         []byte(fmt.Sprintf(`{"event_id":"evt_%016x","amount":"%d"}`, i*7919, i)),
		Ref:             model.LineRef{Path: fmt.Sprintf("/data/log/%s/%06d.jsonl", partition, 1+i/1000), Offset: int64(i) * 97, Length: 60 + i%7},
		ReadAt:          1793800000000 + int64(i),
		WatermarkBefore: model.NoWatermark + int64(i%2), AfterEnd: i%3 == 0,
	}
}

// roundTrip checks decode(encode(v)) == v, then that every strict prefix of
// the encoding and the encoding with a trailing byte are refused with an
// error, never a panic or a wrong value.
func roundTrip[T any](t *testing.T, name string, v T, enc func(T) []byte, dec func([]byte) (T, error)) {
	t.Helper()
	b := enc(v)
	got, err := dec(b)
	if err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%s: round trip\n got  %+v\n want %+v", name, got, v)
	}
	for n := 0; n < len(b); n++ {
		if _, err := dec(b[:n]); err == nil {
			t.Fatalf("%s: a %d-byte prefix of %d decoded without error", name, n, len(b))
		}
	}
	if _, err := dec(append(append([]byte(nil), b...), 0)); err == nil {
		t.Fatalf("%s: a trailing byte decoded without error", name)
	}
}

func TestRoundTrips(t *testing.T) {
	roundTrip(t, "record", model.Record{Partition: "p1", Position: "p1/a.jsonl:3", Line: []byte(`{"x":1}`),
		Oversized: true, ReadAt: 17, WatermarkBefore: model.NoWatermark}, EncodeRecord, DecodeRecord)
	roundTrip(t, "record with its line's place", model.Record{Partition: "p1", Position: "p1/a.jsonl:3", Line: []byte(`{"x":1}`),
		Ref: model.LineRef{Path: "gs://b/log/p1/a.jsonl", Offset: 1 << 40, Length: 7}, ReadAt: 17}, EncodeRecord, DecodeRecord)
	// A record carries the stamper's verdict, so validation need not parse
	// the line again: a valid event (its payload is the line) or a
	// rejection (its payload may be a prefix of its own).
	ev := event(42, "p0")
	roundTrip(t, "record with its event", model.Record{Partition: ev.Partition, Position: ev.Position, Line: ev.Payload,
		Ref: ev.Ref, ReadAt: ev.ReadAt, WatermarkBefore: ev.WatermarkBefore, Valid: &ev}, EncodeRecord, DecodeRecord)
	roundTrip(t, "record with its rejection", model.Record{Partition: "p1", Position: "p1/a.jsonl:4", Line: []byte(`{"x":1} long`),
		Oversized: true, ReadAt: 18, WatermarkBefore: 5, Rejected: &model.Quarantined{Position: "p1/a.jsonl:4",
			Payload: []byte(`{"x":1}`), Reason: model.ReasonOversized, Detail: "line longer than --max-line=7 bytes"}}, EncodeRecord, DecodeRecord)
	unknown := EncodeRecord(model.Record{})
	unknown[len(unknown)-1] = 3 // the verdict is the last byte
	if _, err := DecodeRecord(unknown); err == nil {
		t.Error("a record with an unknown verdict decoded")
	}
	roundTrip(t, "delta", model.Delta{RevenueMicros: -5, Count: 3, AfterEnd: true, Tick: true}, EncodeDelta, DecodeDelta)
	roundTrip(t, "row", model.Row{WindowStart: 1, WindowEnd: 3_600_001, Dims: "{}", RevenueMicros: 170_000_000,
		EventCount: 3, Revision: 4, State: model.Final, Writer: "reconcile:r1"}, EncodeRow, DecodeRow)
	roundTrip(t, "too late", model.TooLate{Position: "p0/f:8", EventID: "D", EventTime: 9, Payload: []byte("{}"),
		Reason: model.ReasonWindowClosed}, EncodeTooLate, DecodeTooLate)
	roundTrip(t, "too late, payload in the raw log", model.TooLate{Position: "p0/f:8", EventID: "D", EventTime: 9,
		Reason: model.ReasonWindowClosed, Ref: model.LineRef{Path: "/log/p0/f", Offset: 812, Length: 90}}, EncodeTooLate, DecodeTooLate)
	roundTrip(t, "conflict", model.Conflict{Position: "p0/f:6", EventID: "A", FirstFingerprint: 1,
		ConflictingFingerprint: 1 << 63, Payload: []byte("{}")}, EncodeConflict, DecodeConflict)
	roundTrip(t, "conflict, payload in the raw log", model.Conflict{Position: "p0/f:6", EventID: "A", FirstFingerprint: 1,
		ConflictingFingerprint: 1 << 63, Ref: model.LineRef{Path: "/log/p0/f", Offset: 5, Length: 1}}, EncodeConflict, DecodeConflict)
	roundTrip(t, "quarantined", model.Quarantined{Position: "p0/f:2", Payload: []byte("{"), Reason: model.ReasonMalformedJSON,
		Detail: "unexpected end"}, EncodeQuarantined, DecodeQuarantined)
}

// decodeBatch decodes a batch and its events, as the steps that read them do.
func decodeBatch(b []byte) (model.EventBatch, error) {
	v, err := DecodeEventBatch(b)
	if err != nil {
		return v, err
	}
	v.Events, err = BatchEvents(v)
	v.Coded, v.N = nil, 0
	return v, err
}

// inBatch is e as a batch carries it: its AfterEnd and PipelineWatermark are
// the batch's (model.EventBatch.Watermark), not coded per event.
func inBatch(e model.Event) model.Event {
	e.AfterEnd, e.PipelineWatermark = false, 0
	return e
}

func TestEventBatchFrontCoding(t *testing.T) {
	// Mixed partitions and files, an empty dims and a repeated event: every
	// front-coded field must survive whatever the previous event was.
	var b model.EventBatch
	for i := range 50 {
		b.Events = append(b.Events, inBatch(event(i*37, fmt.Sprint("p", i%3))))
	}
	b.Events[7].Dims, b.Events[8].Dims = "{}", ""
	b.Events[9] = b.Events[8]
	b.Windows = []int64{-3_600_000, 0, 1_793_786_400_000}
	b.Spans, b.Since, b.Watermark = []int64{1_793_786_400_000, 1_793_782_800_000}, 1_793_782_811_000, model.NoWatermark
	roundTrip(t, "mixed batch", b, EncodeEventBatch, decodeBatch)
	roundTrip(t, "empty batch", model.EventBatch{}, EncodeEventBatch, decodeBatch)
	roundTrip(t, "window marker", model.EventBatch{Windows: []int64{7_200_000}}, EncodeEventBatch, decodeBatch)

	// One partition in read order, as Admit builds them: the shared
	// prefixes cost a few bytes instead of the whole strings.
	var one model.EventBatch
	plain := 0
	for i := range 100 {
		e := event(1000+i, "p2")
		one.Events = append(one.Events, e)
		plain += plainSize(e)
	}
	coded := len(EncodeEventBatch(one))
	if e := one.Events[1]; plain-coded < 100*(len(e.Position)+len(e.Dims)+len(e.Ref.Path)-8) {
		t.Errorf("front coding saved %d bytes over 100 events (%d -> %d), want most of the position, dims and file path", plain-coded, plain, coded)
	}
}

// plainSize is the size of e with every field written whole, the baseline
// front coding is measured against.
func plainSize(e model.Event) int {
	w := Writer{}
	for _, s := range []string{e.EventID, e.UserID, e.Dims, e.Partition, e.Position, string(e.Payload), e.Ref.Path} {
		w.String(s)
	}
	for _, v := range []int64{e.EventTime, e.AmountMicros, e.Ref.Offset, int64(e.Ref.Length), e.ReadAt, e.WatermarkBefore} {
		w.Varint(v)
	}
	w.Fixed64(e.Fingerprint)
	return len(w.B)
}

// A step that passes a batch on without reading its events (the watermark
// gate) codes it again byte for byte from what it decoded, with only the
// header it sets new; the events decode the same after the pass.
func TestCodedBatchPassesOnAsItCame(t *testing.T) {
	var b model.EventBatch
	for i := range 20 {
		b.Events = append(b.Events, inBatch(event(i, "p1")))
	}
	b.Spans, b.Since = []int64{1_793_750_400_000}, 1_793_750_215_086
	in := EncodeEventBatch(b)
	got, err := DecodeEventBatch(in)
	if err != nil || got.Events != nil || got.N != 20 || got.Coded == nil {
		t.Fatalf("decoded %d coded events (%v, decoded %d), want 20 left coded", got.N, err, len(got.Events))
	}
	if again := EncodeEventBatch(got); !bytes.Equal(again, in) {
		t.Errorf("re-coded %d bytes differ from the %d that came", len(again), len(in))
	}
	passed := model.EventBatch{Coded: got.Coded, N: got.N, Watermark: 1_793_754_000_000}
	out, err := decodeBatch(EncodeEventBatch(passed))
	if err != nil || !reflect.DeepEqual(out.Events, b.Events) || out.Watermark != passed.Watermark || out.Spans != nil {
		t.Errorf("after the pass: %v, watermark %d, spans %v; events equal: %v", err, out.Watermark, out.Spans, reflect.DeepEqual(out.Events, b.Events))
	}
	// A batch's events are refused, not misread, when cut short.
	if _, err := BatchEvents(model.EventBatch{Coded: got.Coded[:len(got.Coded)-1], N: got.N}); err == nil {
		t.Error("events cut short by a byte decoded without error")
	}
}

func TestEventBatchTimesAsDifferences(t *testing.T) {
	// Times next to the int64 extremes: the differences wrap, and wrap back.
	var b model.EventBatch
	for i, ts := range []int64{math.MinInt64, math.MaxInt64, 0, -1, math.MinInt64 + 1, 1793750215086} {
		e := inBatch(event(i, "p0"))
		e.EventTime, e.WatermarkBefore, e.ReadAt, e.Ref.Offset = ts, -ts, ^ts, ts
		b.Events = append(b.Events, e)
	}
	roundTrip(t, "extreme times", b, EncodeEventBatch, decodeBatch)

	// One partition's events lie close in time and in the file: each time
	// and offset costs a byte or two, not the 6 of a whole epoch-ms varint.
	var near, far model.EventBatch
	for i := range 100 {
		e := event(1000+i, "p2")
		near.Events = append(near.Events, e)
		e.EventTime, e.WatermarkBefore, e.ReadAt, e.Ref.Offset = 0, 0, 0, 0
		far.Events = append(far.Events, e)
	}
	if extra := len(EncodeEventBatch(near)) - len(EncodeEventBatch(far)); extra > 100*4*2 {
		t.Errorf("four times per event cost %d bytes over 100 events, want at most 2 each", extra)
	}
}

func TestFrontStringRefusesAPrefixLongerThanThePrevious(t *testing.T) {
	w := Writer{}
	w.FrontString("abcdef", "abcxyz")
	r := Reader{B: w.B}
	if got := r.FrontString("abc"); got != "abcxyz" || r.Err != nil {
		t.Fatalf("decoded %q, %v", got, r.Err)
	}
	r = Reader{B: w.B}
	if got := r.FrontString("ab"); r.Err == nil {
		t.Fatalf("prefix 3 of a 2-byte previous string decoded as %q", got)
	}
}
