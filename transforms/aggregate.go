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
	register.DoFn4x1[beam.EventTime, string, model.Delta, func(beam.EventTime, string, model.Delta), error](&preAggregateFn{})
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

// windowSums sums counted events per window, dims and AfterEnd: Dedup's
// output, one Delta per key and judged batch.
type windowSums struct {
	policy triggers.Policy
	sums   groups[windowDims, model.Delta]
}

type windowDims struct {
	start    int64
	dims     string
	afterEnd bool
}

func (w *windowSums) add(e *model.Event) error {
	k := windowDims{start: w.policy.WindowStart(e.EventTime), dims: e.Dims, afterEnd: e.AfterEnd}
	return addDelta(w.sums.at(k, 0), model.Delta{RevenueMicros: e.AmountMicros, Count: 1, AfterEnd: e.AfterEnd},
		func() string { return WindowKey(k.start, k.dims) })
}

// flush emits the sums, keyed by WindowKey, and empties w.
func (w *windowSums) flush(emit func(string, model.Delta)) {
	w.sums.flush(func(k windowDims, _ beam.EventTime, d model.Delta) { emit(WindowKey(k.start, k.dims), d) })
}

// addDelta adds in to d; a total beyond int64 micros is an error naming the key.
func addDelta(d *model.Delta, in model.Delta, key func() string) error {
	sum, err := triggers.AddMicros(d.RevenueMicros, in.RevenueMicros)
	if err != nil {
		return fmt.Errorf("window %s: %w", key(), err)
	}
	d.RevenueMicros, d.AfterEnd = sum, in.AfterEnd
	d.Count += in.Count
	return nil
}

// PreAggregate sums a bundle's Deltas per (window, dims) key into one, stamped
// with its earliest timestamp (holding the revision step's watermark): no hot
// key, and no GroupByKey keeping every event.
func PreAggregate(s beam.Scope, counted beam.PCollection) beam.PCollection {
	s = s.Scope("PreAggregate")
	return beam.ParDo(s, &preAggregateFn{}, counted)
}

type aggKey struct {
	key      string
	afterEnd bool
}

type preAggregateFn struct {
	pending groups[aggKey, model.Delta]
}

func (f *preAggregateFn) StartBundle(_ func(beam.EventTime, string, model.Delta)) { f.pending.reset() }

// ProcessElement declares FinishBundle's emitter, as the SDK requires.
func (f *preAggregateFn) ProcessElement(ts beam.EventTime, key string, in model.Delta, _ func(beam.EventTime, string, model.Delta)) error {
	return addDelta(f.pending.at(aggKey{key: key, afterEnd: in.AfterEnd}, ts), in, func() string { return key })
}

func (f *preAggregateFn) FinishBundle(emit func(beam.EventTime, string, model.Delta)) {
	f.pending.flush(func(k aggKey, ts beam.EventTime, d model.Delta) { emit(ts, k.key, d) })
}
