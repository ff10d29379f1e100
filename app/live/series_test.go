package live_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// figs are figures with read records, all counted but dup duplicates,
// and partitions p0 and p1 with watermarks wm0 and wm1 (p1 idle if idle).
func figs(read, dup, wm0, wm1 int64, idle bool) live.Figures {
	return live.Figures{Counts: metrics.Counts{Read: read, Counted: read - dup, Duplicates: dup},
		Partitions: []live.Partition{{Name: "p0", WatermarkMs: wm0}, {Name: "p1", WatermarkMs: wm1, Idle: idle}}}
}

// rates returns a counter's rates, -1 for null.
func rates(v live.SeriesView, name string) []float64 {
	for _, r := range v.Rates {
		if r.Name == name {
			var out []float64
			for _, x := range r.PerSecond {
				if x == nil {
					out = append(out, -1)
				} else {
					out = append(out, *x)
				}
			}
			return out
		}
	}
	return nil
}

func ints(xs []*int64) []int64 {
	var out []int64
	for _, x := range xs {
		if x == nil {
			out = append(out, -1)
		} else {
			out = append(out, *x)
		}
	}
	return out
}

// TestSeriesBounded: the ring never holds more than Span/Step points, drops
// the ones older than Span, and keeps none offered sooner than Step after
// the last (or from a clock going back).
func TestSeriesBounded(t *testing.T) {
	s := &live.Series{Span: 10 * time.Second, Step: time.Second}
	if s.Cap() != 10 {
		t.Fatalf("Cap %d, want 10", s.Cap())
	}
	for i := range 100 {
		s.Add(t0.Add(time.Duration(i)*time.Second), figs(int64(i), 0, model.NoWatermark, model.NoWatermark, false))
		if s.Len() > s.Cap() {
			t.Fatalf("after %d points the ring holds %d, more than %d", i+1, s.Len(), s.Cap())
		}
	}
	v := s.View()
	if len(v.AtMs) != 10 || v.AtMs[0] != t0.Add(90*time.Second).UnixMilli() || v.AtMs[9] != t0.Add(99*time.Second).UnixMilli() {
		t.Errorf("points at %v: want the last ten, 12:01:30 to 12:01:39", v.AtMs)
	}
	// Too soon, and a clock going back: not kept.
	s.Add(t0.Add(99*time.Second+500*time.Millisecond), figs(1000, 0, 0, 0, false))
	s.Add(t0, figs(1000, 0, 0, 0, false))
	if v := s.View(); len(v.AtMs) != 10 || v.AtMs[9] != t0.Add(99*time.Second).UnixMilli() || rates(v, "read")[9] != 1 {
		t.Errorf("a point sooner than Step was kept: %v, read/s %v", v.AtMs, rates(v, "read"))
	}
	// A minute with no snapshot (nobody looking): the old points go.
	s.Add(t0.Add(160*time.Second), figs(160, 0, 0, 0, false))
	if v := s.View(); len(v.AtMs) != 1 {
		t.Errorf("after a minute's gap the ring holds %v, want the new point alone", v.AtMs)
	}
	// The defaults: ten minutes, one point a second.
	if d := (&live.Series{}); d.Cap() != 600 {
		t.Errorf("default Cap %d, want 600", d.Cap())
	}
}

// TestSeriesRates: rates come from the counters' deltas over the time
// between points (Smooth below Step: each interval alone); a counter that
// goes down (the job's metrics restarted) gives no rate at that point,
// never a negative one, and the next delta is a rate again.
func TestSeriesRates(t *testing.T) {
	s := &live.Series{Smooth: time.Millisecond}
	for _, p := range []struct {
		after    time.Duration
		read, dp int64
	}{{0, 100, 0}, {time.Second, 110, 2}, {3 * time.Second, 140, 5}, {4 * time.Second, 5, 0}, {6 * time.Second, 25, 1}, {6500 * time.Millisecond, 26, 1}} {
		s.Add(t0.Add(p.after), figs(p.read, p.dp, model.NoWatermark, model.NoWatermark, false))
	}
	v := s.View()
	// The point at 6.5 s came sooner than a second after the last: not kept.
	if got, want := rates(v, "read"), []float64{-1, 10, 15, -1, 10}; !slices.Equal(got, want) {
		t.Errorf("read/s %v, want %v (-1: none)", got, want)
	}
	if got, want := rates(v, "duplicates"), []float64{-1, 2, 1.5, -1, 0.5}; !slices.Equal(got, want) {
		t.Errorf("duplicates/s %v, want %v", got, want)
	}
	if got, want := rates(v, "counted"), []float64{-1, 8, 13.5, -1, 9.5}; !slices.Equal(got, want) {
		t.Errorf("counted/s %v, want %v", got, want)
	}
	for _, r := range v.Rates {
		for i, x := range r.PerSecond {
			if x != nil && *x < 0 {
				t.Errorf("%s: negative rate %v at point %d", r.Name, *x, i)
			}
		}
	}
	if names := func() (out []string) {
		for _, r := range v.Rates {
			out = append(out, r.Name)
		}
		return out
	}(); !slices.Equal(names, []string{"read", "counted", "duplicates", "conflicts", "quarantined", "too_late"}) {
		t.Errorf("rates of %v", names)
	}
	// Over Smooth (2 s): a point's rate reaches back to the earliest
	// point at most 2 s before it, never across a reset.
	s = &live.Series{Smooth: 2 * time.Second}
	for i, read := range []int64{0, 10, 10, 40, 2, 6, 12} {
		s.Add(t0.Add(time.Duration(i)*time.Second), figs(read, 0, 0, 0, false))
	}
	if got, want := rates(s.View(), "read"), []float64{-1, 10, 5, 15, -1, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("read/s over 2 s: %v, want %v", got, want)
	}
	// Thirds round to thousandths.
	s = &live.Series{}
	s.Add(t0, figs(0, 0, 0, 0, false))
	s.Add(t0.Add(3*time.Second), figs(1, 0, 0, 0, false))
	if got := rates(s.View(), "read"); got[1] != 0.333 {
		t.Errorf("1 record in 3 s: %v/s, want 0.333", got[1])
	}
}

// TestSeriesWatermarkLag: the pipeline watermark's lag is the point's time
// minus the minimum watermark over the active partitions; each
// partition's lag is kept apart; no watermark, no lag.
func TestSeriesWatermarkLag(t *testing.T) {
	s := &live.Series{}
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	s.Add(t0, figs(0, 0, model.NoWatermark, model.NoWatermark, false))
	s.Add(t0.Add(time.Second), figs(1, 0, at(-9*time.Second), model.NoWatermark, false))
	s.Add(t0.Add(2*time.Second), figs(2, 0, at(-8*time.Second), at(-20*time.Second), false))
	s.Add(t0.Add(3*time.Second), figs(3, 0, at(-7*time.Second), at(-20*time.Second), true)) // p1 idle
	v := s.View()
	if got, want := ints(v.WatermarkLagMs), []int64{-1, 10_000, 22_000, 10_000}; !slices.Equal(got, want) {
		t.Errorf("pipeline watermark lag %v, want %v (-1: none)", got, want)
	}
	if len(v.Partitions) != 2 || v.Partitions[0].Name != "p0" || v.Partitions[1].Name != "p1" {
		t.Fatalf("partitions %+v", v.Partitions)
	}
	if got, want := ints(v.Partitions[0].LagMs), []int64{-1, 10_000, 10_000, 10_000}; !slices.Equal(got, want) {
		t.Errorf("p0 lag %v, want %v", got, want)
	}
	if got, want := ints(v.Partitions[1].LagMs), []int64{-1, -1, 22_000, 23_000}; !slices.Equal(got, want) {
		t.Errorf("p1 lag %v, want %v", got, want)
	}
	// As /api/live carries it: numbers and nulls.
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		SpanMs int64      `json:"span_ms"`
		AtMs   []int64    `json:"at_ms"`
		Lag    []*int64   `json:"watermark_lag_ms"`
		Rates  []struct { // read first
			Name string     `json:"name"`
			PerS []*float64 `json:"per_s"`
		} `json:"rates"`
	}
	if err := json.Unmarshal(raw, &api); err != nil {
		t.Fatal(err)
	}
	if api.SpanMs != 600_000 || len(api.AtMs) != 4 || api.Lag[0] != nil || *api.Lag[1] != 10_000 || api.Rates[0].Name != "read" || *api.Rates[0].PerS[3] != 1 {
		t.Errorf("series JSON: %s", raw)
	}
}

// clock is a settable clock for a Monitor.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestMonitorSeriesAndFinalState: the monitor adds a point at each fresh
// snapshot with figures (on its own clock); a final state stays, with
// when the job ended, the elapsed time stops there and no point is added
// after it.
func TestMonitorSeriesAndFinalState(t *testing.T) {
	c := &clock{t0}
	read := int64(0)
	mon := &live.Monitor{Now: c.now}
	mon.Start(func(context.Context) (live.Figures, bool) {
		return figs(read, 0, c.t.Add(-10*time.Second).UnixMilli(), c.t.Add(-12*time.Second).UnixMilli(), false), true
	})
	ctx := context.Background()
	for range 5 {
		mon.Snapshot(ctx)
		c.t, read = c.t.Add(time.Second), read+20
	}
	s := mon.Snapshot(ctx) // at t0+5s
	if s.Series == nil || len(s.Series.AtMs) != 6 {
		t.Fatalf("series: %+v", s.Series)
	}
	if got := rates(*s.Series, "read"); !slices.Equal(got, []float64{-1, 20, 20, 20, 20, 20}) {
		t.Errorf("read/s %v", got)
	}
	if got := ints(s.Series.WatermarkLagMs); !slices.Equal(got, []int64{12_000, 12_000, 12_000, 12_000, 12_000, 12_000}) {
		t.Errorf("lag %v", got)
	}
	if s.Final || s.State != "RUNNING" || s.EndedAt != "" {
		t.Errorf("running: final %v, state %s, ended %q", s.Final, s.State, s.EndedAt)
	}

	mon.SetState("STOPPING")
	if s := mon.Snapshot(ctx); s.Final {
		t.Errorf("STOPPING is not final")
	}
	c.t = c.t.Add(2 * time.Second)
	mon.SetState("DONE")
	c.t = c.t.Add(time.Minute)
	s = mon.Snapshot(ctx)
	if !s.Final || s.State != "DONE" || s.EndedAtMs != t0.Add(7*time.Second).UnixMilli() || s.EndedAt != "2026-11-30T12:00:07Z" || s.Elapsed != "7s" {
		t.Errorf("after DONE: final %v, state %s, ended %s (%d), elapsed %s; want DONE at 12:00:07 after 7s", s.Final, s.State, s.EndedAt, s.EndedAtMs, s.Elapsed)
	}
	if s.Series == nil || len(s.Series.AtMs) != 6 || s.Series.AtMs[5] != t0.Add(5*time.Second).UnixMilli() {
		t.Errorf("points after the end: %v", s.Series)
	}
	// Another state after the end does not move when it ended.
	mon.SetState("FAILED")
	c.t = c.t.Add(time.Second)
	if s := mon.Snapshot(ctx); s.EndedAtMs != t0.Add(7*time.Second).UnixMilli() || !live.FinalState(s.State) {
		t.Errorf("ended at %d, state %s", s.EndedAtMs, s.State)
	}
}
