package gen

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// TestLiveFeedVerdicts runs the live feed on a simulated clock (three
// minutes of ticks, no sleeping) and replays what it wrote, partition by
// partition, through the reader's stamper: the lines the feed meant as too
// late are exactly those whose window closed for their partition's own
// watermark (rule (a)), its malformed lines are exactly the quarantined
// ones, and every scenario happened.
func TestLiveFeedVerdicts(t *testing.T) {
	window, lateness, bound, idle := 10*time.Second, 30*time.Second, 2*time.Second, 4*time.Second
	c := Live(window, lateness, bound, idle)
	c.Seed = 42
	c.MaxLine = 4096
	dir := filepath.Join(t.TempDir(), "live")
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := newLiveFeed(dir, c, start)
	if err := f.g.mkdirs(); err != nil {
		t.Fatal(err)
	}
	end := start.Add(3 * time.Minute)
	for now := start; now.Before(end); now = now.Add(c.Tick) {
		if err := f.tick(now.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	st := f.st
	t.Logf("%+v", st)
	if st.Events == 0 || st.Duplicates == 0 || st.Conflicts == 0 || st.Late == 0 || st.Backlog == 0 ||
		st.TooLate == 0 || st.Malformed == 0 || st.IdleGaps < 2 {
		t.Errorf("a scenario is missing: %+v", st)
	}

	policy := triggers.Policy{Window: window, AllowedLateness: lateness}
	cfg := event.DefaultConfig()
	cfg.MaxLine = c.MaxLine
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parts, LivePartitions(c)) {
		t.Fatalf("partitions %v", parts)
	}
	lines, tooLate, quarantined := 0, 0, 0
	for _, p := range parts {
		files, err := rawlog.ListFiles(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(files) {
			t.Errorf("%s: files not in arrival order", p)
		}
		stamper := rawlog.NewStamper(watermark.Policy{OutOfOrderBound: bound, IdleTimeout: idle}, cfg, end.UnixMilli())
		if _, err := rawlog.Scan(dir, p, cfg.MaxLine, end.UnixMilli(), func(rec model.Record) error {
			lines++
			ev, q := stamper.Stamp(&rec)
			switch {
			case q != nil:
				quarantined++
			case rec.WatermarkBefore != model.NoWatermark && policy.Closed(policy.WindowStart(ev.EventTime), rec.WatermarkBefore):
				tooLate++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if lines != st.Lines || tooLate != st.TooLate || quarantined != st.Malformed {
		t.Errorf("read %d lines, %d too late by rule (a), %d quarantined; the feed wrote %d, %d and %d",
			lines, tooLate, quarantined, st.Lines, st.TooLate, st.Malformed)
	}
}

func TestLiveConfigValidate(t *testing.T) {
	if err := Live(time.Minute, 3*time.Minute, 10*time.Second, 15*time.Second).Validate(); err != nil {
		t.Errorf("the demo's settings: %v", err)
	}
	for _, c := range []LiveConfig{
		Live(time.Minute, time.Minute, 10*time.Second, 15*time.Second),      // no room for late uploads
		Live(10*time.Second, 30*time.Second, time.Second, 4*time.Second),    // bound below two ticks
		Live(10*time.Second, 30*time.Second, 2*time.Second, 25*time.Second), // no room for the idle gap
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}
