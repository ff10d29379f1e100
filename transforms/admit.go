// Package transforms holds the pipeline's DoFns and composite transforms, one
// concern per file. Each DoFn is a thin shell around a plain-Go rule from
// event, watermark or triggers: the rules are tested without a runner, the
// shells only move elements, state and timers.
package transforms

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn7x0[context.Context, beam.EventTime, model.Record, func(beam.EventTime, int, model.EventBatch),
		func(beam.EventTime, int64, int64), func(model.Quarantined), func(model.TooLate)](&admitFn{})
	register.Emitter3[beam.EventTime, int, model.EventBatch]()
	register.Emitter3[beam.EventTime, int64, int64]()
	register.Emitter1[model.Quarantined]()
	register.Emitter1[model.TooLate]()
}

// AdmitOptions configures Admit.
type AdmitOptions struct {
	Event  event.Config
	Bound  time.Duration // out-of-order bound, the delay counters' reference
	Policy triggers.Policy
	// ReadAhead names the job's read-ahead account (flow.ReadAhead; "": none),
	// which a record routed to too-late leaves here.
	ReadAhead string
}

// codedEventBytes is about a coded event's size in a batch, what Admit sizes
// a batch's buffer by.
const codedEventBytes = 64

// Admitted is what Admit sends on.
type Admitted struct {
	// Batches are the events that passed, KV<gate key, model.EventBatch>: a
	// bundle's events by gate key (ShardOf the id, GateKeys) and partition,
	// stamped with the earliest timestamp, so a partition's copies of an id
	// are judged in read order and state is read once a batch (a State API
	// round trip per access: docs/capacity.md).
	Batches beam.PCollection
	// Windows are KV<window start, earliest timestamp>, once per window a
	// bundle touched, for AnnounceWindows.
	Windows     beam.PCollection
	Quarantined beam.PCollection // model.Quarantined
	TooLate     beam.PCollection // model.TooLate, rule (a)
}

// Admit applies the per-record rules before the shuffle, in one step because
// each step costs every record a copy and a box on the SDK's path (issue #26):
// the source's verdict (event.Parse for an unstamped record), too-late rule (a)
// (SPEC §4: an event whose window closed before its partition's watermark,
// however a replay is bundled), then the gate's batches and announced windows.
// It counts records read and quarantined and each event's delays
// (metrics.Lateness, Arrival). Events leave without their raw line when the
// raw log holds it (Payloads).
func Admit(s beam.Scope, records beam.PCollection, o AdmitOptions) Admitted {
	s = s.Scope("Admit")
	out := beam.ParDoN(s, &admitFn{Config: o.Event, Bound: o.Bound, Policy: o.Policy, ReadAhead: o.ReadAhead}, records)
	return Admitted{Batches: out[0], Windows: out[1], Quarantined: out[2], TooLate: out[3]}
}

type admitFn struct {
	Config    event.Config
	Bound     time.Duration
	Policy    triggers.Policy
	ReadAhead string

	read, quarantined, tooLate beam.Counter
	byPartition                map[string]beam.Counter // cached: off the hot path
	lateness, arrival          []beam.Counter          // by delay.Buckets index
	latenessMs, arrivalMs      beam.Distribution
	readAhead                  *flow.ReadAhead

	pending groups[batchKey, admitBatch]
	windows map[int64]beam.EventTime // window start: earliest timestamp
	// perBatch is the last bundle's mean batch, each new batch's capacity:
	// appends that double from nothing allocate twice what they keep.
	perBatch int
}

// admitBatch is a batch being built: its events coded as they come (a quarter
// of a model.Event each), and the header the gate reads instead (Spans, Since).
type admitBatch struct {
	events coders.EventsWriter
	spans  []int64
	since  int64
}

type batchKey struct {
	shard     int
	partition string
}

func (f *admitFn) Setup() {
	f.read = metrics.Counter(metrics.Read)
	f.quarantined = metrics.Counter(metrics.Quarantined)
	f.tooLate = metrics.Counter(metrics.TooLate)
	f.byPartition = map[string]beam.Counter{}
	f.lateness = make([]beam.Counter, len(delay.Buckets))
	f.arrival = make([]beam.Counter, len(delay.Buckets))
	for i := range delay.Buckets {
		f.lateness[i] = metrics.Counter(metrics.Bucket(metrics.Lateness, i))
		f.arrival[i] = metrics.Counter(metrics.Bucket(metrics.Arrival, i))
	}
	f.latenessMs = metrics.Distribution(metrics.Ms(metrics.Lateness))
	f.arrivalMs = metrics.Distribution(metrics.Ms(metrics.Arrival))
	f.readAhead = flow.ReadAheadOf(f.ReadAhead)
}

// StartBundle declares ProcessElement's emitters, as the SDK requires.
func (f *admitFn) StartBundle(func(beam.EventTime, int, model.EventBatch), func(beam.EventTime, int64, int64), func(model.Quarantined), func(model.TooLate)) {
	f.pending.reset()
	f.windows = map[int64]beam.EventTime{}
}

func (f *admitFn) ProcessElement(ctx context.Context, ts beam.EventTime, r model.Record,
	_ func(beam.EventTime, int, model.EventBatch), _ func(beam.EventTime, int64, int64),
	quarantine func(model.Quarantined), late func(model.TooLate)) {
	f.read.Inc(ctx, 1)
	c, ok := f.byPartition[r.Partition]
	if !ok {
		c = metrics.Counter(metrics.ReadBy(r.Partition))
		f.byPartition[r.Partition] = c
	}
	c.Inc(ctx, 1)
	e, q := verdict(r, f.Config)
	if q != nil {
		f.quarantined.Inc(ctx, 1)
		metrics.Counter(metrics.QuarantinedBy(q.Reason)).Inc(ctx, 1)
		quarantine(*q)
		return
	}
	lateness := delay.Lateness(e.EventTime, r.WatermarkBefore, f.Bound)
	f.lateness[delay.Index(lateness)].Inc(ctx, 1)
	f.latenessMs.Update(ctx, lateness)
	arrival := delay.Arrival(e.EventTime, r.ReadAt)
	f.arrival[delay.Index(arrival)].Inc(ctx, 1)
	f.arrivalMs.Update(ctx, arrival)
	w := f.Policy.WindowStart(e.EventTime)
	if f.Policy.Closed(w, e.WatermarkBefore) {
		f.tooLate.Inc(ctx, 1)
		f.readAhead.Taken(1, e.WatermarkBefore)
		late(TooLateRecord(e))
		return
	}
	if !e.Ref.IsZero() {
		e.Payload = nil // audit rows read it back from the raw log (Payloads)
	}
	// Nothing past here reads these: the fingerprint holds the user, the
	// delay counters above measured the arrival.
	e.UserID, e.ReadAt = "", 0
	b := f.pending.at(batchKey{shard: ShardOf(e.EventID, GateKeys), partition: e.Partition}, ts)
	if b.spans == nil {
		b.events.Grow(f.perBatch, codedEventBytes)
		b.since = int64(mtime.MaxTimestamp)
	}
	b.events.Add(&e)
	if !slices.Contains(b.spans, w) {
		b.spans = append(b.spans, w)
	}
	b.since = min(b.since, eventTimestamp(&e))
	if first, ok := f.windows[w]; !ok || ts < first {
		f.windows[w] = ts
	}
}

// FinishBundle sends the bundle's batches, then its windows in order.
func (f *admitFn) FinishBundle(emit func(beam.EventTime, int, model.EventBatch), window func(beam.EventTime, int64, int64),
	_ func(model.Quarantined), _ func(model.TooLate)) {
	batches, events := len(f.pending.order), 0
	f.pending.flush(func(k batchKey, ts beam.EventTime, b admitBatch) {
		coded, n := b.events.Coded()
		events += n
		emit(ts, k.shard, model.EventBatch{Coded: coded, N: n, Spans: b.spans, Since: b.since})
	})
	if batches > 0 {
		f.perBatch = events/batches + 1
	}
	for _, start := range slices.Sorted(maps.Keys(f.windows)) {
		ts := f.windows[start]
		window(ts, start, int64(ts))
	}
	f.windows = nil
}

// verdict is the validation result the record carries, or event.Parse's.
func verdict(r model.Record, cfg event.Config) (model.Event, *model.Quarantined) {
	switch {
	case r.Valid != nil:
		return *r.Valid, nil
	case r.Rejected != nil:
		return model.Event{}, r.Rejected
	}
	return event.Parse(r, cfg)
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
