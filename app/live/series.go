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

// lag is how far a watermark trails at (epoch ms), nil for model.NoWatermark.
func lag(at, wm int64) *int64 {
	if wm == model.NoWatermark {
		return nil
	}
	l := at - wm
	return &l
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

// DefaultIdleEpisodes is how many ended idle episodes a monitor keeps.
const DefaultIdleEpisodes = 20

// IdleEpisode is a time a partition was idle (SPEC §2) as the monitor's snapshots saw it: the job
// reports idleness as a gauge, so a short episode may go unseen (IdleView.Moves counts all).
// SinceMs is the first snapshot that saw it idle, ActiveSeenMs the last before that saw it active,
// UntilMs the first that saw it active again; DurationMs runs to UntilMs, or for an ongoing
// episode to the snapshot or the job's end. WatermarkMs and Read are as first seen idle, ReadAfter
// as seen active again (the backlog it came back with).
type IdleEpisode struct {
	Partition    string `json:"partition"`
	SinceMs      int64  `json:"since_ms"`
	ActiveSeenMs int64  `json:"active_seen_ms,omitempty"`
	UntilMs      int64  `json:"until_ms,omitempty"`
	Ongoing      bool   `json:"ongoing"`
	DurationMs   int64  `json:"duration_ms"`
	WatermarkMs  *int64 `json:"watermark_ms,omitempty"`
	Read         int64  `json:"read"`
	ReadAfter    int64  `json:"read_after,omitempty"`
}

// IdleView is the idle episodes a snapshot shows: the ongoing ones and up to DefaultIdleEpisodes
// others, newest first (Dropped: the rest); Moves, each partition's moves to idle as the job
// counted them; WatchedSinceMs, the first snapshot with figures.
type IdleView struct {
	Episodes       []IdleEpisode  `json:"episodes"`
	Dropped        int            `json:"dropped,omitempty"`
	Moves          []metrics.Term `json:"moves_to_idle"`
	WatchedSinceMs int64          `json:"watched_since_ms"`
}

// idleTracker follows each partition's idleness across snapshots; the Monitor guards it.
type idleTracker struct {
	since    int64
	seen     map[string]partSeen
	episodes []IdleEpisode // oldest first
	dropped  int
}

// partSeen is a partition at the latest snapshot.
type partSeen struct {
	at   int64
	idle bool
}

// add records the partitions as of at (epoch ms).
func (t *idleTracker) add(at int64, parts []Partition) {
	if t.seen == nil {
		t.seen, t.since = map[string]partSeen{}, at
	}
	for _, p := range parts {
		prev, known := t.seen[p.Name]
		switch {
		case p.Idle && (!known || !prev.idle):
			e := IdleEpisode{Partition: p.Name, SinceMs: at, Ongoing: true, Read: p.Read}
			if p.WatermarkMs != model.NoWatermark {
				wm := p.WatermarkMs
				e.WatermarkMs = &wm
			}
			if known {
				e.ActiveSeenMs = prev.at
			}
			t.episodes = append(t.episodes, e)
		case !p.Idle && known && prev.idle:
			// A partition has one ongoing episode at most, and trim keeps every ongoing one.
			e := &t.episodes[slices.IndexFunc(t.episodes, func(e IdleEpisode) bool { return e.Ongoing && e.Partition == p.Name })]
			e.UntilMs, e.Ongoing, e.DurationMs, e.ReadAfter = at, false, at-e.SinceMs, p.Read
		}
		t.seen[p.Name] = partSeen{at: at, idle: p.Idle}
	}
	t.trim()
}

// trim lets the oldest ended episodes go beyond DefaultIdleEpisodes.
func (t *idleTracker) trim() {
	drop := -DefaultIdleEpisodes
	for _, e := range t.episodes {
		if !e.Ongoing {
			drop++
		}
	}
	t.episodes = slices.DeleteFunc(t.episodes, func(e IdleEpisode) bool {
		if e.Ongoing || drop <= 0 {
			return false
		}
		drop, t.dropped = drop-1, t.dropped+1
		return true
	})
}

// view is the episodes as of at (endedAt, when not 0, stops ongoing ones there).
func (t *idleTracker) view(at, endedAt int64, f Figures) *IdleView {
	v := &IdleView{Episodes: []IdleEpisode{}, Dropped: t.dropped, WatchedSinceMs: t.since}
	end := cmp.Or(endedAt, at)
	for _, e := range slices.Backward(t.episodes) {
		if e.Ongoing {
			e.DurationMs = max(0, end-e.SinceMs)
		}
		v.Episodes = append(v.Episodes, e)
	}
	for _, p := range f.Partitions {
		v.Moves = append(v.Moves, metrics.Term{Name: p.Name, Value: f.Counts.Counters[string(metrics.IdleTransitions(p.Name))]})
	}
	return v
}
