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

// aggKey is a Delta's key before FinishBundle spells it (WindowKey): no
// string is built per event.
type aggKey struct {
	start    int64
	dims     string
	afterEnd bool
}

type preAggregateFn struct {
	Policy triggers.Policy

	pending groups[aggKey, model.Delta]
}

func (f *preAggregateFn) StartBundle(_ func(beam.EventTime, string, model.Delta)) { f.pending.reset() }

// ProcessElement declares the emitter FinishBundle uses (the SDK takes
// outputs from ProcessElement's signature).
func (f *preAggregateFn) ProcessElement(ts beam.EventTime, e model.Event, _ func(beam.EventTime, string, model.Delta)) error {
	k := aggKey{start: f.Policy.WindowStart(e.EventTime), dims: e.Dims, afterEnd: e.AfterEnd}
	d := f.pending.at(k, ts)
	sum, err := triggers.AddMicros(d.RevenueMicros, e.AmountMicros)
	if err != nil {
		return fmt.Errorf("pre-aggregate %s: %w", WindowKey(k.start, k.dims), err)
	}
	d.RevenueMicros, d.AfterEnd = sum, e.AfterEnd
	d.Count++
	return nil
}

func (f *preAggregateFn) FinishBundle(emit func(beam.EventTime, string, model.Delta)) {
	f.pending.flush(func(k aggKey, ts beam.EventTime, d model.Delta) { emit(ts, WindowKey(k.start, k.dims), d) })
}
