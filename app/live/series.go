package live

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// The time series' defaults: ten minutes, at most a point a second, rates over 10 s.
const (
	DefaultSeriesSpan   = 10 * time.Minute
	DefaultSeriesStep   = time.Second
	DefaultSeriesSmooth = 10 * time.Second
)

// rated are the counters given a rate: read and the conservation identity's terms.
func rated(c metrics.Counts) []metrics.Term {
	return append([]metrics.Term{{Name: string(metrics.Read), Value: c.Read}}, c.Terms()...)
}

// Series keeps the job's figures over the last minutes for the live page's charts, at most
// Span/Step points; not safe for concurrent use (the Monitor guards it).
type Series struct {
	// Span is how far back the series reach, Step the least time between two points, Smooth how
	// far back a rate reaches (never across a reset): counters are committed in bundles, so
	// one-second rates jump. Zero: the defaults.
	Span, Step, Smooth time.Duration

	points []point // oldest first
}

// point is the figures at one instant (epoch ms); wm may be model.NoWatermark.
type point struct {
	at, wm int64
	counts []metrics.Term // rated
	parts  []Partition
}

// Cap is how many points the series holds at most: Span/Step.
func (s *Series) Cap() int {
	span, step := cmp.Or(s.Span, DefaultSeriesSpan), cmp.Or(s.Step, DefaultSeriesStep)
	return max(2, int(span/step))
}

// Len is how many points the series holds.
func (s *Series) Len() int { return len(s.points) }

// Add records f as of at, unless at is less than Step after the latest point (or before it), and
// drops points older than Span (all but the latest) or beyond Cap.
func (s *Series) Add(at time.Time, f Figures) {
	ms := at.UnixMilli()
	if n := len(s.points); n > 0 && ms-s.points[n-1].at < max(1, cmp.Or(s.Step, DefaultSeriesStep).Milliseconds()) {
		return
	}
	s.points = append(s.points, point{at: ms, counts: rated(f.Counts), wm: pipelineWatermark(f.Partitions), parts: slices.Clone(f.Partitions)})
	oldest := ms - cmp.Or(s.Span, DefaultSeriesSpan).Milliseconds()
	drop := max(0, len(s.points)-s.Cap())
	for drop < len(s.points)-1 && s.points[drop].at < oldest {
		drop++
	}
	s.points = slices.Delete(s.points, 0, drop)
}

// SeriesView is a Series as /api/live carries it: one array per quantity, index i for AtMs[i],
// oldest first; null where there is no value. Rates are per second (see Series.Smooth); the lags
// are the point's time minus the pipeline's and each partition's watermark.
type SeriesView struct {
	SpanMs         int64             `json:"span_ms"`
	AtMs           []int64           `json:"at_ms"`
	Rates          []RateSeries      `json:"rates"`
	WatermarkLagMs []*int64          `json:"watermark_lag_ms"`
	Partitions     []PartitionSeries `json:"partitions"`
}

// RateSeries is one counter's rate per second, rounded to thousandths.
type RateSeries struct {
	Name      string     `json:"name"`
	PerSecond []*float64 `json:"per_s"`
}

// PartitionSeries is one partition's watermark lag.
type PartitionSeries struct {
	Name  string   `json:"name"`
	LagMs []*int64 `json:"lag_ms"`
}

// View returns the points as arrays.
func (s *Series) View() SeriesView {
	pts, n := s.points, len(s.points)
	v := SeriesView{SpanMs: cmp.Or(s.Span, DefaultSeriesSpan).Milliseconds(), AtMs: make([]int64, n),
		WatermarkLagMs: make([]*int64, n)}
	smooth := cmp.Or(s.Smooth, DefaultSeriesSmooth).Milliseconds()
	for k, t := range rated(metrics.Counts{}) {
		r := RateSeries{Name: t.Name, PerSecond: make([]*float64, n)}
		count := func(i int) int64 { return pts[i].counts[k].Value }
		for i := 1; i < n; i++ {
			if count(i) < count(i-1) {
				continue // a reset: no rate
			}
			j := i - 1
			for j > 0 && pts[i].at-pts[j-1].at <= smooth && count(j-1) <= count(j) {
				j--
			}
			x := math.Round(float64(count(i)-count(j))*1e6/float64(pts[i].at-pts[j].at)) / 1e3
			r.PerSecond[i] = &x
		}
		v.Rates = append(v.Rates, r)
	}
	lag := func(at, wm int64) *int64 {
		if wm == model.NoWatermark {
			return nil
		}
		l := at - wm
		return &l
	}
	parts := map[string][]*int64{}
	for i, p := range pts {
		v.AtMs[i], v.WatermarkLagMs[i] = p.at, lag(p.at, p.wm)
		for _, pw := range p.parts {
			if parts[pw.Name] == nil {
				parts[pw.Name] = make([]*int64, n)
			}
			parts[pw.Name][i] = lag(p.at, pw.WatermarkMs)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		v.Partitions = append(v.Partitions, PartitionSeries{Name: name, LagMs: parts[name]})
	}
	return v
}

// pipelineWatermark is the minimum over active partitions (SPEC §2), or model.NoWatermark.
func pipelineWatermark(parts []Partition) int64 {
	wm := model.NoWatermark
	for _, p := range parts {
		if p.WatermarkMs != model.NoWatermark && !p.Idle && (wm == model.NoWatermark || p.WatermarkMs < wm) {
			wm = p.WatermarkMs
		}
	}
	return wm
}
