// Package delay is the delay histogram of the pipeline's metrics and the run report. Beam
// distributions carry only min, max, sum and count, so each delay is counted per bucket.
package delay

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// Unbounded is the upper bound of the last, open bucket.
const Unbounded int64 = math.MaxInt64

// Buckets are the exclusive upper bounds (ms) of the histogram's buckets,
// roughly logarithmic (milliseconds to days); the last is Unbounded.
var Buckets = []int64{
	time.Minute.Milliseconds(),
	5 * time.Minute.Milliseconds(),
	10 * time.Minute.Milliseconds(),
	30 * time.Minute.Milliseconds(),
	time.Hour.Milliseconds(),
	6 * time.Hour.Milliseconds(),
	24 * time.Hour.Milliseconds(),
	Unbounded,
}

// Index is the bucket of a delay in ms (a negative delay counts as 0).
func Index(ms int64) int {
	if i := slices.IndexFunc(Buckets, func(u int64) bool { return ms < u }); i >= 0 {
		return i
	}
	return len(Buckets) - 1
}

// Lateness is an event's event-time lateness (ms): how far behind the largest valid event time
// its partition had shown (watermarkBefore + bound) it is, 0 when it moves the partition forward.
func Lateness(eventTime, watermarkBefore int64, bound time.Duration) int64 {
	if watermarkBefore == model.NoWatermark {
		return 0
	}
	return max(0, watermarkBefore+bound.Milliseconds()-eventTime)
}

// Arrival is an event's arrival delay (ms): read time minus event time, at least 0.
func Arrival(eventTime, readAt int64) int64 { return max(0, readAt-eventTime) }

// Exact is an exact distribution of delays (ms): the distinct values, ascending, and how often
// each occurred. The advisor keeps every delay; the run report quantises them first (report's
// TraceFolder).
type Exact struct{ Values, Counts []int64 }

// ExactOf counts values, sorting them in place.
func ExactOf(values []int64) Exact {
	slices.Sort(values)
	var e Exact
	for i, v := range values {
		if i == 0 || v != values[i-1] {
			e.Values, e.Counts = append(e.Values, v), append(e.Counts, 0)
		}
		e.Counts[len(e.Counts)-1]++
	}
	return e
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of the delays, 0 when there are
// none: among n delays, the one of rank ceil(n * p / 100), at least 1.
func (e Exact) Percentile(p int) int64 {
	if p <= 0 || p > 100 {
		panic(fmt.Sprintf("delay: percentile %d out of (0, 100]", p))
	}
	var n int64
	for _, c := range e.Counts {
		n += c
	}
	rank, seen := max((n*int64(p)+99)/100, 1), int64(0)
	for i, c := range e.Counts {
		seen += c
		if seen >= rank {
			return e.Values[i]
		}
	}
	return 0 // no delays
}

// Buckets counts the delays in Buckets.
func (e Exact) Buckets() []int64 {
	out := make([]int64, len(Buckets))
	for i, v := range e.Values {
		out[Index(v)] += e.Counts[i]
	}
	return out
}

// Histogram is one delay metric read back from its bucket counters.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
	Total   int64    `json:"total"`
	// P50, P95 and P99 are the upper bounds (ms) of the buckets holding them, 0 when Total is 0.
	P50 int64 `json:"p50_below_ms"`
	P95 int64 `json:"p95_below_ms"`
	P99 int64 `json:"p99_below_ms"`
}

// Bucket is one bar of a Histogram: Count delays in [previous Upper, Upper).
type Bucket struct {
	Label string `json:"label"`
	Upper int64  `json:"upper_ms"`
	Count int64  `json:"count"`
}

// NewHistogram builds the histogram of counts (counts[i] for Buckets[i]).
func NewHistogram(counts []int64) Histogram {
	h := Histogram{Buckets: make([]Bucket, len(Buckets))}
	for i, u := range Buckets {
		h.Buckets[i] = Bucket{Label: Label(i), Upper: u}
		if i < len(counts) {
			h.Buckets[i].Count = counts[i]
			h.Total += counts[i]
		}
	}
	// The delays as far as the buckets know them: each at its bucket's upper bound.
	e := Exact{Values: Buckets, Counts: h.Counts()}
	h.P50, h.P95, h.P99 = e.Percentile(50), e.Percentile(95), e.Percentile(99)
	return h
}

// Counts returns the bucket counts.
func (h Histogram) Counts() []int64 {
	return slicesx.Map(h.Buckets, func(b Bucket) int64 { return b.Count })
}

// Percentiles renders "p50 <1m, p95 <6h, p99 >=24h", or "none" for an empty histogram.
func (h Histogram) Percentiles() string {
	if h.Total == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s, p95 %s, p99 %s", Below(h.P50), Below(h.P95), Below(h.P99))
}

// Below renders a percentile's upper bound: "<5m", or ">=24h" for Unbounded.
func Below(upper int64) string {
	if upper == Unbounded {
		return ">=" + Span(Buckets[len(Buckets)-2])
	}
	return "<" + Span(upper)
}

// Label names bucket i, [lower, upper): "<1m", "1-5m", "30m-1h", ">24h" (upper Unbounded).
func Label(i int) string {
	lower, upper := lowerOf(i), Buckets[i]
	switch {
	case upper == Unbounded:
		return ">" + Span(lower)
	case lower == 0:
		return "<" + Span(upper)
	}
	lo, hi := Span(lower), Span(upper)
	// "1-5m" rather than "1m-5m" when both share the unit.
	if u := lo[len(lo)-1]; u == hi[len(hi)-1] && u != 's' {
		lo = lo[:len(lo)-1]
	}
	return lo + "-" + hi
}

// CounterName is the counter of bucket i of a metric: metric_0_1m, ..., metric_24h_inf.
func CounterName(metric string, i int) string {
	lower, upper := "0", "inf"
	if i > 0 {
		lower = Span(lowerOf(i))
	}
	if Buckets[i] != Unbounded {
		upper = Span(Buckets[i])
	}
	return metric + "_" + lower + "_" + upper
}

func lowerOf(i int) int64 {
	if i == 0 {
		return 0
	}
	return Buckets[i-1]
}

// Span renders a duration in ms compactly: "90s", "5m", "24h", "250ms".
func Span(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", int64(d/time.Hour))
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", int64(d/time.Minute))
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return fmt.Sprintf("%dms", ms)
}
