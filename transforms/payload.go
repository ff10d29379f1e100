package transforms

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	register.DoFn4x0[context.Context, beam.EventTime, model.Conflict, func(beam.EventTime, model.Conflict)](&payloadFn[model.Conflict]{})
	register.DoFn4x0[context.Context, beam.EventTime, model.TooLate, func(beam.EventTime, model.TooLate)](&payloadFn[model.TooLate]{})
	register.Emitter2[beam.EventTime, model.Conflict]()
	register.Emitter2[beam.EventTime, model.TooLate]()
}

// Payloads gives conflicts and rule-(b) too-late records back the payloads
// dropped before the shuffle (model.Event.Ref), read from the raw log at the
// bundle's end (files.ReadRanges). A line read back must parse to the record's
// event_id and fingerprint or event time, else the bundle fails.
func Payloads(s beam.Scope, cfg event.Config, conflicts, tooLate beam.PCollection) (beam.PCollection, beam.PCollection) {
	s = s.Scope("Payloads")
	return beam.ParDo(s, &payloadFn[model.Conflict]{Config: cfg}, conflicts), beam.ParDo(s, &payloadFn[model.TooLate]{Config: cfg}, tooLate)
}

// payloadFn emits a record that carries its payload (or has no place in the
// raw log) at once, and keeps the others for FinishBundle.
type payloadFn[T model.Conflict | model.TooLate] struct {
	Config  event.Config
	records []T
	ts      []beam.EventTime
}

func (f *payloadFn[T]) ProcessElement(_ context.Context, ts beam.EventTime, v T, emit func(beam.EventTime, T)) {
	if a := auditOf(&v); len(*a.payload) > 0 || a.ref.IsZero() {
		emit(ts, v)
		return
	}
	f.records, f.ts = append(f.records, v), append(f.ts, ts)
}

// FinishBundle reads the kept records' payloads, sets and checks each, and
// emits them; a record refused fails the bundle, naming its table.
func (f *payloadFn[T]) FinishBundle(ctx context.Context, emit func(beam.EventTime, T)) error {
	defer func() { f.records, f.ts = f.records[:0], f.ts[:0] }()
	payloads, err := files.ReadRanges(ctx, slicesx.Map(f.records, func(v T) model.LineRef { return auditOf(&v).ref }))
	if err != nil {
		return fmt.Errorf("payload of a record cannot be read back from the raw log: %w", err)
	}
	for i := range f.records {
		a := auditOf(&f.records[i])
		*a.payload = payloads[i]
		if err := checkPayload(payloads[i], f.Config, a.pos, a.ref, a.id, a.same); err != nil {
			return fmt.Errorf("%s: %w", a.table, err)
		}
		emit(f.ts[i], f.records[i])
	}
	return nil
}

// audit is what payloadFn reads and sets of a record: its table, position,
// event_id, payload and place in the raw log, and what its event must match.
type audit struct {
	table, pos, id string
	payload        *[]byte
	ref            model.LineRef
	same           func(model.Event) bool
}

func auditOf[T model.Conflict | model.TooLate](v *T) audit {
	switch v := any(v).(type) {
	case *model.Conflict:
		return audit{"conflict_events", v.Position, v.EventID, &v.Payload, v.Ref,
			func(e model.Event) bool { return e.Fingerprint == v.ConflictingFingerprint }}
	case *model.TooLate:
		return audit{"too_late_events", v.Position, v.EventID, &v.Payload, v.Ref,
			func(e model.Event) bool { return e.EventTime == v.EventTime }}
	}
	panic(fmt.Sprintf("transforms: no payload for %T", v))
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
