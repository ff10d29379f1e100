package transforms

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn3x1[beam.EventTime, model.Event, func(beam.EventTime, string, model.Delta), error](&preAggregateFn{})
	register.Emitter3[beam.EventTime, string, model.Delta]()
}

// WindowKey is the key of the revision step: window start and dims.
func WindowKey(start int64, dims string) string {
	return strconv.FormatInt(start, 10) + "|" + dims
}

// ParseWindowKey is the inverse of WindowKey.
func ParseWindowKey(k string) (start int64, dims string, err error) {
	ms, dims, ok := strings.Cut(k, "|")
	if !ok {
		return 0, "", fmt.Errorf("malformed window key %q", k)
	}
	start, err = strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("malformed window key %q: %w", k, err)
	}
	return start, dims, nil
}

// PreAggregate sums a bundle's counted events per (window, dims) key into one
// Delta per key, stamped with its earliest event's timestamp (holding the
// revision step's watermark): no hot key, and no GroupByKey keeping every event.
func PreAggregate(s beam.Scope, counted beam.PCollection, p triggers.Policy) beam.PCollection {
	s = s.Scope("PreAggregate")
	return beam.ParDo(s, &preAggregateFn{Policy: p}, counted)
}

type aggKey struct {
	key      string
	afterEnd bool
}

type pendingDelta struct {
	ts    beam.EventTime
	delta model.Delta
}

type preAggregateFn struct {
	Policy triggers.Policy

	pending map[aggKey]*pendingDelta
	order   []aggKey
}

func (f *preAggregateFn) StartBundle(_ func(beam.EventTime, string, model.Delta)) {
	f.pending = map[aggKey]*pendingDelta{}
	f.order = f.order[:0]
}

// ProcessElement declares the emitter FinishBundle uses (the SDK takes
// outputs from ProcessElement's signature).
func (f *preAggregateFn) ProcessElement(ts beam.EventTime, e model.Event, _ func(beam.EventTime, string, model.Delta)) error {
	k := aggKey{key: WindowKey(f.Policy.WindowStart(e.EventTime), e.Dims), afterEnd: e.AfterEnd}
	d, ok := f.pending[k]
	if !ok {
		d = &pendingDelta{ts: ts, delta: model.Delta{AfterEnd: e.AfterEnd}}
		f.pending[k] = d
		f.order = append(f.order, k)
	}
	if ts < d.ts {
		d.ts = ts
	}
	sum, err := triggers.AddMicros(d.delta.RevenueMicros, e.AmountMicros)
	if err != nil {
		return fmt.Errorf("pre-aggregate %s: %w", k.key, err)
	}
	d.delta.RevenueMicros = sum
	d.delta.Count++
	return nil
}

func (f *preAggregateFn) FinishBundle(emit func(beam.EventTime, string, model.Delta)) {
	for _, k := range f.order {
		d := f.pending[k]
		emit(d.ts, k.key, d.delta)
	}
	f.pending = nil
	f.order = f.order[:0]
}
