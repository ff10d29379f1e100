package transforms

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn4x0[context.Context, model.Event, func(model.Event), func(model.TooLate)](&tooLateFn{})
	register.Emitter1[model.TooLate]()
}

// TooLate is rule (a) of the too-late gate (SPEC §4): an event whose window
// closed before its partition's watermark goes to too-late, the same however
// a replay is bundled (rule (b) is WatermarkGate's). readAhead names the job's
// read-ahead account (flow.ReadAhead; "": none), which such an event leaves here.
func TooLate(s beam.Scope, events beam.PCollection, p triggers.Policy, readAhead string) (open, tooLate beam.PCollection) {
	s = s.Scope("TooLate")
	return beam.ParDo2(s, &tooLateFn{Policy: p, ReadAhead: readAhead}, events)
}

type tooLateFn struct {
	Policy    triggers.Policy
	ReadAhead string

	tooLate   beam.Counter
	readAhead *flow.ReadAhead
}

func (f *tooLateFn) Setup() {
	f.tooLate = metrics.Counter(metrics.TooLate)
	f.readAhead = flow.ReadAheadOf(f.ReadAhead)
}

func (f *tooLateFn) ProcessElement(ctx context.Context, e model.Event, open func(model.Event), late func(model.TooLate)) {
	if f.Policy.Closed(f.Policy.WindowStart(e.EventTime), e.WatermarkBefore) {
		f.tooLate.Inc(ctx, 1)
		f.readAhead.Taken(1, e.WatermarkBefore)
		late(TooLateRecord(e))
		return
	}
	if !e.Ref.IsZero() {
		// Past here audit rows read payloads back from the raw log
		// (Payloads): the others never carry it through the shuffle.
		e.Payload = nil
	}
	open(e)
}

// TooLateRecord is the audit row of an event routed to too-late.
func TooLateRecord(e model.Event) model.TooLate {
	return model.TooLate{
		Position:  e.Position,
		EventID:   e.EventID,
		EventTime: e.EventTime,
		Payload:   e.Payload,
		Reason:    model.ReasonWindowClosed,
		Ref:       e.Ref,
	}
}
