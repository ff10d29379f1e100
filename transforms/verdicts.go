// Package transforms holds the pipeline's DoFns and composite transforms, one
// concern per file. Each DoFn is a thin shell around a plain-Go rule from
// event, watermark or triggers: the rules are tested without a runner, the
// shells only move elements, state and timers.
package transforms

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"

	_ "github.com/revenue-stream/hourly/coders" // element coders
)

// Namespace is the pipeline's metrics namespace, re-exported for callers
// that read the counters of a pipeline this package built.
const Namespace = metrics.Namespace

func init() {
	register.DoFn4x0[context.Context, model.Record, func(model.Event), func(model.Quarantined)](&verdictFn{})
	register.Emitter1[model.Event]()
	register.Emitter1[model.Quarantined]()
}

// SplitVerdicts splits records by the verdict the source stamped on them
// (event.Parse, for a record that comes unstamped): valid events, and
// quarantined records with their reason. It
// counts records read and quarantined, and each event's delays
// (metrics.Lateness, Arrival) against bound, the out-of-order bound.
func SplitVerdicts(s beam.Scope, records beam.PCollection, cfg event.Config, bound time.Duration) (events, quarantined beam.PCollection) {
	s = s.Scope("SplitVerdicts")
	return beam.ParDo2(s, &verdictFn{Config: cfg, Bound: bound}, records)
}

type verdictFn struct {
	Config event.Config
	Bound  time.Duration

	read, quarantined     beam.Counter
	byPartition           map[string]beam.Counter // cached: off the hot path
	lateness, arrival     []beam.Counter          // by delay.Buckets index
	latenessMs, arrivalMs beam.Distribution
}

func (f *verdictFn) Setup() {
	f.read = metrics.Counter(metrics.Read)
	f.quarantined = metrics.Counter(metrics.Quarantined)
	f.byPartition = map[string]beam.Counter{}
	f.lateness = make([]beam.Counter, len(delay.Buckets))
	f.arrival = make([]beam.Counter, len(delay.Buckets))
	for i := range delay.Buckets {
		f.lateness[i] = metrics.Counter(metrics.Bucket(metrics.Lateness, i))
		f.arrival[i] = metrics.Counter(metrics.Bucket(metrics.Arrival, i))
	}
	f.latenessMs = metrics.Distribution(metrics.Ms(metrics.Lateness))
	f.arrivalMs = metrics.Distribution(metrics.Ms(metrics.Arrival))
}

func (f *verdictFn) ProcessElement(ctx context.Context, r model.Record, emit func(model.Event), quarantine func(model.Quarantined)) {
	f.read.Inc(ctx, 1)
	c, ok := f.byPartition[r.Partition]
	if !ok {
		c = metrics.Counter(metrics.ReadBy(r.Partition))
		f.byPartition[r.Partition] = c
	}
	c.Inc(ctx, 1)
	ev, q := verdict(r, f.Config)
	if q != nil {
		f.quarantined.Inc(ctx, 1)
		metrics.Counter(metrics.QuarantinedBy(q.Reason)).Inc(ctx, 1)
		quarantine(*q)
		return
	}
	late := delay.Lateness(ev.EventTime, r.WatermarkBefore, f.Bound)
	f.lateness[delay.Index(late)].Inc(ctx, 1)
	f.latenessMs.Update(ctx, late)
	arrival := delay.Arrival(ev.EventTime, r.ReadAt)
	f.arrival[delay.Index(arrival)].Inc(ctx, 1)
	f.arrivalMs.Update(ctx, arrival)
	emit(ev)
}

// verdict is the record's validation result: the one it carries, or
// event.Parse's.
func verdict(r model.Record, cfg event.Config) (model.Event, *model.Quarantined) {
	switch {
	case r.Valid != nil:
		return *r.Valid, nil
	case r.Rejected != nil:
		return model.Event{}, r.Rejected
	}
	return event.Parse(r, cfg)
}
