// Package transforms holds the pipeline's DoFns and composite transforms, one
// concern per file. Each DoFn is a thin shell around a plain-Go rule from
// event, watermark or triggers: the rules are tested without a runner, the
// shells only move elements, state and timers.
package transforms

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"

	_ "github.com/revenue-stream/hourly/coders" // element coders
)

// Metric namespace shared by every counter of the pipeline.
const Namespace = "revenue"

func init() {
	register.DoFn4x0[context.Context, model.Record, func(model.Event), func(model.Quarantined)](&validateFn{})
	register.Emitter1[model.Event]()
	register.Emitter1[model.Quarantined]()
}

// Validate parses raw records into events; rejected records come out in the
// second collection with their quarantine reason. Nothing is dropped: every
// record read ends in exactly one of the two.
func Validate(s beam.Scope, records beam.PCollection, cfg event.Config) (events, quarantined beam.PCollection) {
	s = s.Scope("Validate")
	return beam.ParDo2(s, &validateFn{Config: cfg}, records)
}

type validateFn struct {
	Config event.Config

	read, quarantined beam.Counter
	// byPartition caches the per-partition counters: building one per
	// record (name concatenation, lookup) would sit on the hot path.
	byPartition map[string]beam.Counter
}

func (f *validateFn) Setup() {
	f.read = beam.NewCounter(Namespace, "read")
	f.quarantined = beam.NewCounter(Namespace, "quarantined")
	f.byPartition = map[string]beam.Counter{}
}

func (f *validateFn) ProcessElement(ctx context.Context, r model.Record, emit func(model.Event), quarantine func(model.Quarantined)) {
	f.read.Inc(ctx, 1)
	c, ok := f.byPartition[r.Partition]
	if !ok {
		c = beam.NewCounter(Namespace, "read_partition_"+r.Partition)
		f.byPartition[r.Partition] = c
	}
	c.Inc(ctx, 1)
	ev, q := event.Parse(r, f.Config)
	if q != nil {
		f.quarantined.Inc(ctx, 1)
		beam.NewCounter(Namespace, "quarantined_"+q.Reason).Inc(ctx, 1)
		quarantine(*q)
		return
	}
	emit(ev)
}
