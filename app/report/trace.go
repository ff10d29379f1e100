package report

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/watermark"
)

// MaxTracePoints caps a partition's trace: enough for a 1,200-pixel chart, a few hundred KB a
// report.
const MaxTracePoints = 400

// TraceFolder replays every partition of a raw-log folder as the file source reads it (rawlog.Scan,
// a rawlog.Stamper read at now) and records per valid event its event time and the partition
// watermark before it: the deterministic watermarks of SPEC §4 rule (a). The pipeline watermark
// depends on the runner and is not traced. The delay histogram measures event-time lateness (behind
// the partition's largest event time so far), which decides ON_TIME, LATE or too late; a replay's
// wall-clock delay would measure the replay. Percentiles are exact to the second (the minute above
// an hour). Partitions come back sorted.
func TraceFolder(dir string, policy watermark.Policy, cfg event.Config, now time.Time) ([]PartitionTrace, delay.Histogram, error) {
	if policy.IdleTimeout <= 0 {
		// Idleness does not change the partition watermark; any positive value is valid.
		policy.IdleTimeout = time.Minute
	}
	if err := errors.Join(policy.Validate(), cfg.Validate()); err != nil {
		return nil, delay.Histogram{}, fmt.Errorf("report: trace %s: %w", dir, err)
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, delay.Histogram{}, fmt.Errorf("report: trace %s: %w", dir, err)
	}
	at := now.UnixMilli()
	delays := delayRecorder{}
	traces := make([]PartitionTrace, 0, len(parts))
	for _, p := range parts {
		tr := PartitionTrace{Partition: p, Watermark: model.NoWatermark}
		st := rawlog.NewStamper(policy, cfg, at)
		smp := newSampler(MaxTracePoints)
		_, err := rawlog.Scan(dir, p, cfg.MaxLine, at, func(rec model.Record) error {
			tr.Read++
			ev, q := st.Stamp(&rec)
			if q != nil {
				return nil
			}
			tr.Valid++
			pt := TracePoint{Record: tr.Read, EventTime: ev.EventTime, Watermark: rec.WatermarkBefore}
			if pt.Behind() {
				tr.Behind++
			}
			smp.add(pt)
			delays.add(delay.Lateness(ev.EventTime, rec.WatermarkBefore, policy.OutOfOrderBound))
			return nil
		})
		if err != nil {
			return nil, delay.Histogram{}, fmt.Errorf("report: trace %s partition %q: %w", dir, p, err)
		}
		tr.Points = smp.points()
		tr.Watermark = st.Watermark()
		traces = append(traces, tr)
	}
	return traces, delays.histogram(), nil
}

// sampler keeps a bounded sample of a partition's points: equal-width buckets of records each keep
// their lowest and highest event time (a stride sample would drop the rare late events), and
// neighbours merge, width doubling, when they outgrow the limit.
type sampler struct {
	maxBuckets int
	width      int // records per bucket
	buckets    []extremes
}

type extremes struct {
	lo, hi TracePoint
	ok     bool
}

func (e extremes) merge(o extremes) extremes {
	switch {
	case !e.ok:
		return o
	case !o.ok:
		return e
	}
	if o.lo.EventTime < e.lo.EventTime {
		e.lo = o.lo
	}
	if o.hi.EventTime > e.hi.EventTime {
		e.hi = o.hi
	}
	return e
}

func newSampler(limit int) *sampler {
	return &sampler{maxBuckets: max(1, limit/2), width: 1}
}

func (s *sampler) add(p TracePoint) {
	i := (p.Record - 1) / s.width
	for i >= s.maxBuckets {
		merged := make([]extremes, (len(s.buckets)+1)/2, s.maxBuckets)
		for j := range merged {
			merged[j] = s.buckets[2*j]
			if 2*j+1 < len(s.buckets) {
				merged[j] = merged[j].merge(s.buckets[2*j+1])
			}
		}
		s.buckets, s.width = merged, s.width*2
		i = (p.Record - 1) / s.width
	}
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, extremes{})
	}
	s.buckets[i] = s.buckets[i].merge(extremes{lo: p, hi: p, ok: true})
}

// points returns the sample in arrival order.
func (s *sampler) points() []TracePoint {
	var out []TracePoint
	for _, b := range s.buckets {
		if !b.ok {
			continue
		}
		first, second := b.lo, b.hi
		if second.Record < first.Record {
			first, second = second, first
		}
		out = append(out, first)
		if second.Record != first.Record {
			out = append(out, second)
		}
	}
	return out
}

// delayRecorder counts delays quantised to the second below an hour and the minute above, for
// exact percentiles (delay.Exact): a few thousand entries for billions of events. Quantising down
// to a whole second or minute never crosses a bucket bound.
type delayRecorder map[int64]int64

func (r delayRecorder) add(ms int64) {
	if ms >= time.Hour.Milliseconds() {
		r[ms-ms%time.Minute.Milliseconds()]++
	} else {
		r[ms-ms%1000]++
	}
}

// histogram is the bucket counts with the recorded delays' own percentiles.
func (r delayRecorder) histogram() delay.Histogram {
	e := delay.Exact{Values: slices.Sorted(maps.Keys(r))}
	e.Counts = slicesx.Map(e.Values, func(v int64) int64 { return r[v] })
	h := delay.NewHistogram(e.Buckets())
	if h.Total > 0 {
		h.P50, h.P95, h.P99 = e.Percentile(50), e.Percentile(95), e.Percentile(99)
	}
	return h
}
