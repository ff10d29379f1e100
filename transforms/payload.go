package transforms

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	register.DoFn4x0[context.Context, beam.EventTime, model.Conflict, func(beam.EventTime, model.Conflict)](&conflictPayloadFn{})
	register.DoFn4x0[context.Context, beam.EventTime, model.TooLate, func(beam.EventTime, model.TooLate)](&tooLatePayloadFn{})
	register.Emitter2[beam.EventTime, model.Conflict]()
	register.Emitter2[beam.EventTime, model.TooLate]()
}

// Payloads gives conflicts and rule-(b) too-late records back the payloads
// dropped before the shuffle (model.Event.Ref), read from the raw log at the
// bundle's end (files.ReadRanges). A line read back must parse to the record's event_id and
// fingerprint or event time, else the bundle fails rather than write a wrong one.
func Payloads(s beam.Scope, cfg event.Config, conflicts, tooLate beam.PCollection) (beam.PCollection, beam.PCollection) {
	s = s.Scope("Payloads")
	return beam.ParDo(s, &conflictPayloadFn{Config: cfg}, conflicts), beam.ParDo(s, &tooLatePayloadFn{Config: cfg}, tooLate)
}

type conflictPayloadFn struct {
	Config  event.Config
	pending pendingPayloads[model.Conflict]
}

func (f *conflictPayloadFn) ProcessElement(_ context.Context, ts beam.EventTime, c model.Conflict, emit func(beam.EventTime, model.Conflict)) {
	f.pending.add(ts, c, c.Payload, c.Ref, emit)
}

func (f *conflictPayloadFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, model.Conflict)) error {
	return f.pending.flush(ctx, "conflict_events", func(c *model.Conflict, b []byte) error {
		c.Payload = b
		return checkPayload(b, f.Config, c.Position, c.Ref, c.EventID, func(e model.Event) bool {
			return e.Fingerprint == c.ConflictingFingerprint
		})
	}, emit)
}

type tooLatePayloadFn struct {
	Config  event.Config
	pending pendingPayloads[model.TooLate]
}

func (f *tooLatePayloadFn) ProcessElement(_ context.Context, ts beam.EventTime, t model.TooLate, emit func(beam.EventTime, model.TooLate)) {
	f.pending.add(ts, t, t.Payload, t.Ref, emit)
}

func (f *tooLatePayloadFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, model.TooLate)) error {
	return f.pending.flush(ctx, "too_late_events", func(t *model.TooLate, b []byte) error {
		t.Payload = b
		return checkPayload(b, f.Config, t.Position, t.Ref, t.EventID, func(e model.Event) bool {
			return e.EventTime == t.EventTime
		})
	}, emit)
}

// pendingPayloads is a bundle's audit records that read their payloads
// back at its end.
type pendingPayloads[T any] struct {
	records []T
	ts      []beam.EventTime
	refs    []model.LineRef
}

// add emits a record that carries its payload (or has no place in the raw
// log) and keeps the others for flush.
func (p *pendingPayloads[T]) add(ts beam.EventTime, v T, payload []byte, ref model.LineRef, emit func(beam.EventTime, T)) {
	if len(payload) > 0 || ref.IsZero() {
		emit(ts, v)
		return
	}
	p.records, p.ts, p.refs = append(p.records, v), append(p.ts, ts), append(p.refs, ref)
}

// flush reads the kept records' payloads, lets fill set and check each,
// and emits them; a record refused fails the bundle, naming table.
func (p *pendingPayloads[T]) flush(ctx context.Context, table string, fill func(*T, []byte) error, emit func(beam.EventTime, T)) error {
	defer func() { p.records, p.ts, p.refs = p.records[:0], p.ts[:0], p.refs[:0] }()
	payloads, err := files.ReadRanges(ctx, p.refs)
	if err != nil {
		return fmt.Errorf("payload of a record cannot be read back from the raw log: %w", err)
	}
	for i := range p.records {
		if err := fill(&p.records[i], payloads[i]); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		emit(p.ts[i], p.records[i])
	}
	return nil
}

// checkPayload parses a payload read back and checks that it is the
// record's: valid, with its event_id, and what same says of the event.
func checkPayload(b []byte, cfg event.Config, pos string, ref model.LineRef, id string, same func(model.Event) bool) error {
	// Read time and watermark far from any limit: only identity is checked.
	e, q := event.Parse(model.Record{Line: b, ReadAt: math.MaxInt64, WatermarkBefore: model.NoWatermark}, cfg)
	if q == nil && e.EventID == id && same(e) {
		return nil
	}
	return fmt.Errorf("%s: bytes %d-%d of %s are no longer the record judged (raw-log files must stay as they appeared); refusing to write a wrong payload",
		pos, ref.Offset, ref.Offset+int64(ref.Length), ref.Path)
}
