package live_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// TestMonitorIdleEpisodes: the monitor follows each partition's idleness
// from snapshot to snapshot (on its clock): an episode from the first
// snapshot that saw the partition idle (after the last that saw it active)
// to the first that saw it active again, with the watermark it held and
// the records it came back with; newest first, beside the job's own count
// of moves to idle; an episode still going at the job's end stops there,
// and none begins after it.
func TestMonitorIdleEpisodes(t *testing.T) {
	c := &clock{t0}
	var parts []live.Partition
	moves := map[string]int64{}
	mon := &live.Monitor{Now: c.now}
	mon.Start(func(context.Context) (live.Figures, bool) {
		return live.Figures{Counts: metrics.Counts{Counters: moves}, Partitions: parts}, true
	})
	ctx := context.Background()
	at := func(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixMilli() }
	wm := t0.Add(-10 * time.Second).UnixMilli()
	// step sets the partitions at t0 + sec and takes a snapshot.
	step := func(sec int, ps ...live.Partition) live.Snapshot {
		c.t, parts = t0.Add(time.Duration(sec)*time.Second), ps
		return mon.Snapshot(ctx)
	}
	p := func(name string, idle bool, read int64) live.Partition {
		return live.Partition{Name: name, WatermarkMs: wm, Idle: idle, Read: read}
	}

	// p2 is idle when first seen: no active sighting before it.
	if s := step(0, p("p0", false, 5), p("p1", false, 10), p("p2", true, 0)); s.Idle == nil || len(s.Idle.Episodes) != 1 ||
		!reflect.DeepEqual(s.Idle.Episodes[0], live.IdleEpisode{Partition: "p2", SinceMs: at(0), Ongoing: true, WatermarkMs: &wm}) {
		t.Fatalf("at 0 s: %+v", s.Idle)
	}
	step(1, p("p0", false, 6), p("p1", true, 10), p("p2", true, 0))
	step(5, p("p0", false, 7), p("p1", true, 10), p("p2", true, 0))
	step(7, p("p0", false, 8), p("p1", false, 25), p("p2", true, 0))
	moves["idle_transitions_p0"], moves["idle_transitions_p1"] = 2, 1 // p0's first was too short to see
	s := step(8, p("p0", true, 8), p("p1", false, 25), p("p2", true, 0))
	want := &live.IdleView{
		Episodes: []live.IdleEpisode{
			{Partition: "p0", SinceMs: at(8), ActiveSeenMs: at(7), Ongoing: true, WatermarkMs: &wm, Read: 8},
			{Partition: "p1", SinceMs: at(1), ActiveSeenMs: at(0), UntilMs: at(7), DurationMs: 6000, WatermarkMs: &wm, Read: 10, ReadAfter: 25},
			{Partition: "p2", SinceMs: at(0), Ongoing: true, DurationMs: 8000, WatermarkMs: &wm},
		},
		Moves:          []metrics.Term{{Name: "p0", Value: 2}, {Name: "p1", Value: 1}, {Name: "p2", Value: 0}},
		WatchedSinceMs: at(0),
	}
	if !reflect.DeepEqual(s.Idle, want) {
		t.Errorf("at 8 s:\n%+v\nwant\n%+v", s.Idle, want)
	}

	// The job ends at 10 s: the ongoing episodes stop there, and what the
	// partitions do afterwards is not followed.
	c.t = t0.Add(10 * time.Second)
	mon.SetState("DONE")
	s = step(12, p("p0", false, 9), p("p1", true, 25), p("p2", false, 3))
	want.Episodes[0].DurationMs, want.Episodes[2].DurationMs = 2000, 10_000
	if !reflect.DeepEqual(s.Idle, want) {
		t.Errorf("after the end:\n%+v\nwant\n%+v", s.Idle, want)
	}
}

// TestMonitorIdleEpisodesBounded: the monitor keeps the ongoing episodes
// and the latest DefaultIdleEpisodes ended ones, and counts the others.
func TestMonitorIdleEpisodesBounded(t *testing.T) {
	c := &clock{t0}
	var parts []live.Partition
	mon := &live.Monitor{Now: c.now}
	mon.Start(func(context.Context) (live.Figures, bool) { return live.Figures{Partitions: parts}, true })
	var s live.Snapshot
	for i := range 2*(live.DefaultIdleEpisodes+3) + 1 {
		c.t = t0.Add(time.Duration(i) * time.Second)
		// p0 idle every other second; p1 idle throughout.
		parts = []live.Partition{{Name: "p0", WatermarkMs: model.NoWatermark, Idle: i%2 == 1}, {Name: "p1", WatermarkMs: model.NoWatermark, Idle: true}}
		s = mon.Snapshot(context.Background())
	}
	eps := s.Idle.Episodes
	if len(eps) != live.DefaultIdleEpisodes+1 || s.Idle.Dropped != 3 {
		t.Fatalf("%d episodes kept, %d dropped; want %d and 3", len(eps), s.Idle.Dropped, live.DefaultIdleEpisodes+1)
	}
	// Newest first: p0's last one (from 45 s to 46 s), ..., and p1's,
	// ongoing since 0 s, last.
	if e := eps[0]; e.Partition != "p0" || e.SinceMs != t0.Add(45*time.Second).UnixMilli() || e.UntilMs != t0.Add(46*time.Second).UnixMilli() {
		t.Errorf("newest episode %+v", e)
	}
	if e := eps[len(eps)-1]; e.Partition != "p1" || !e.Ongoing || e.SinceMs != t0.UnixMilli() || e.DurationMs != 46_000 {
		t.Errorf("oldest episode %+v", e)
	}
}
