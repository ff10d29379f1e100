package live

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// The time series' defaults: ten minutes, one point a second at most,
// rates over 10 s.
const (
	DefaultSeriesSpan   = 10 * time.Minute
	DefaultSeriesStep   = time.Second
	DefaultSeriesSmooth = 10 * time.Second
)

// rateNames are the counters a series gives a rate of, in the order of
// point.counts: the records read and their five verdicts.
var rateNames = []string{"read", "counted", "duplicates", "conflicts", "quarantined", "too_late"}

// Series keeps the job's figures over the last minutes in a bounded ring,
// for the live page's charts: the conservation counters (as rates, from
// the deltas between points), the pipeline watermark and each partition's.
// It holds at most Span/Step points whatever the job's age, and takes
// the time of each point from its caller (no clock of its own). It is not
// safe for concurrent use: the Monitor guards it.
type Series struct {
	// Span is how far back the series reach (default DefaultSeriesSpan).
	Span time.Duration
	// Step is the least time between two points (default
	// DefaultSeriesStep): figures offered sooner are not kept.
	Step time.Duration
	// Smooth is how far back a point's rates reach (default
	// DefaultSeriesSmooth): over the interval from the earliest point at
	// most Smooth before it (the previous point at least) that no
	// counter reset lies between. The job's counters are committed in
	// bundles, so the rates of one-second intervals jump between 0 and
	// several times the mean; Smooth below Step gives them as they are.
	Smooth time.Duration

	ring []point // len(ring) is the capacity once allocated
	head int     // the oldest point
	n    int
}

// point is the figures at one instant.
type point struct {
	at     int64 // epoch ms
	counts [6]int64
	// wm is the pipeline watermark (model.NoWatermark: none yet).
	wm    int64
	parts []partWatermark
}

type partWatermark struct {
	name string
	wm   int64
}

// Cap is how many points the ring holds at most: Span/Step.
func (s *Series) Cap() int {
	span, step := cmp.Or(s.Span, DefaultSeriesSpan), cmp.Or(s.Step, DefaultSeriesStep)
	return max(2, int(span/step))
}

// Len is how many points the ring holds.
func (s *Series) Len() int { return s.n }

// Add records the figures f as of at. It keeps nothing when at is less
// than Step after the latest point (or before it: a clock going back),
// and drops the points older than Span before at, and the oldest one when
// the ring is full.
func (s *Series) Add(at time.Time, f Figures) {
	ms := at.UnixMilli()
	if s.n > 0 && ms-s.at(s.n-1) < max(1, cmp.Or(s.Step, DefaultSeriesStep).Milliseconds()) {
		return
	}
	if s.ring == nil {
		s.ring = make([]point, s.Cap())
	}
	c := f.Counts
	p := point{at: ms, counts: [6]int64{c.Read, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate},
		wm: pipelineWatermark(f.Partitions)}
	for _, pt := range f.Partitions {
		p.parts = append(p.parts, partWatermark{pt.Name, pt.WatermarkMs})
	}
	if s.n == len(s.ring) {
		s.head, s.n = (s.head+1)%len(s.ring), s.n-1
	}
	s.ring[(s.head+s.n)%len(s.ring)] = p
	s.n++
	oldest := ms - cmp.Or(s.Span, DefaultSeriesSpan).Milliseconds()
	for s.n > 1 && s.at(0) < oldest {
		s.ring[s.head] = point{}
		s.head, s.n = (s.head+1)%len(s.ring), s.n-1
	}
}

// at is the time of the i-th point, oldest first.
func (s *Series) at(i int) int64 { return s.get(i).at }

func (s *Series) get(i int) *point { return &s.ring[(s.head+i)%len(s.ring)] }

// SeriesView is a Series as /api/live carries it: one array per quantity,
// index i for the point at AtMs[i], oldest first. A value is null where
// there is none: no rate at the first point or where a counter went down
// (the job's metrics restarted: the delta is not a rate), no lag without a
// watermark.
type SeriesView struct {
	SpanMs int64   `json:"span_ms"`
	AtMs   []int64 `json:"at_ms"`
	// Rates are per second over the interval ending at each point (see
	// Series.Smooth), from the counters' deltas: read, then each verdict.
	Rates []RateSeries `json:"rates"`
	// WatermarkLagMs is the point's time minus the pipeline watermark (the
	// minimum over active partitions).
	WatermarkLagMs []*int64 `json:"watermark_lag_ms"`
	// Partitions are each partition's watermark lag, in name order.
	Partitions []PartitionSeries `json:"partitions"`
}

// RateSeries is one counter's rate.
type RateSeries struct {
	Name string `json:"name"`
	// PerSecond is the rate, rounded to thousandths.
	PerSecond []*float64 `json:"per_s"`
}

// PartitionSeries is one partition's watermark lag.
type PartitionSeries struct {
	Name  string   `json:"name"`
	LagMs []*int64 `json:"lag_ms"`
}

// View returns the points as arrays.
func (s *Series) View() SeriesView {
	v := SeriesView{SpanMs: cmp.Or(s.Span, DefaultSeriesSpan).Milliseconds(), AtMs: make([]int64, s.n),
		WatermarkLagMs: make([]*int64, s.n)}
	smooth := cmp.Or(s.Smooth, DefaultSeriesSmooth).Milliseconds()
	for k, name := range rateNames {
		r := RateSeries{Name: name, PerSecond: make([]*float64, s.n)}
		for i := 1; i < s.n; i++ {
			cur := s.get(i)
			if cur.counts[k] < s.get(i - 1).counts[k] {
				continue // a reset: no rate
			}
			j := i - 1
			for j > 0 && cur.at-s.at(j-1) <= smooth && s.get(j - 1).counts[k] <= s.get(j).counts[k] {
				j--
			}
			from := s.get(j)
			x := math.Round(float64(cur.counts[k]-from.counts[k])*1e6/float64(cur.at-from.at)) / 1e3
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
	for i := range s.n {
		p := s.get(i)
		v.AtMs[i], v.WatermarkLagMs[i] = p.at, lag(p.at, p.wm)
		for _, pw := range p.parts {
			if parts[pw.name] == nil {
				parts[pw.name] = make([]*int64, s.n)
			}
			parts[pw.name][i] = lag(p.at, pw.wm)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		v.Partitions = append(v.Partitions, PartitionSeries{Name: name, LagMs: parts[name]})
	}
	return v
}

// pipelineWatermark is the minimum watermark over the active partitions
// (SPEC §2), or model.NoWatermark.
func pipelineWatermark(parts []Partition) int64 {
	wm := model.NoWatermark
	for _, p := range parts {
		if p.WatermarkMs != model.NoWatermark && !p.Idle && (wm == model.NoWatermark || p.WatermarkMs < wm) {
			wm = p.WatermarkMs
		}
	}
	return wm
}
