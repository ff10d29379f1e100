package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/cdp"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// fixture is a monitor over a real SQLite sink that the test writes
// revisions into, as the job's sink writer would, with figures the test
// sets.
type fixture struct {
	db      *sinks.SQLite
	mon     *live.Monitor
	figures atomic.Pointer[live.Figures]
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "revenue.db")
	db, err := sinktest.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db}
	f.mon = &live.Monitor{Title: "hourly revenue · live page test", Sink: sinks.Spec{Scheme: sinks.SchemeSQLite, Path: path},
		Settings: []live.Setting{{Name: "window", Value: "1m"}}, MaxAge: time.Millisecond}
	t.Cleanup(func() { f.mon.Close() })
	f.figures.Store(&live.Figures{})
	f.mon.Start(func(context.Context) (live.Figures, bool) { return *f.figures.Load(), true })
	return f
}

var window = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()

// write stores one revision of the window [12:00, 12:01).
func (f *fixture) write(t *testing.T, rev int64, st model.ResultState, revenue, count int64) {
	t.Helper()
	row := model.Row{WindowStart: window, WindowEnd: window + 60_000, Dims: "{}", RevenueMicros: revenue, EventCount: count,
		Revision: rev, State: st, Writer: "stream"}
	if _, err := f.db.Write(context.Background(), sinks.Batch{Rows: []model.Row{row}}); err != nil {
		t.Fatal(err)
	}
	c := pipeline.Counts{Read: count + 4, Counted: count, Duplicates: 1, Conflicts: 1, TooLate: 1,
		Rows: map[string]int64{st.String(): rev}}
	f.figures.Store(&live.Figures{Counts: c, Partitions: []live.Partition{
		{Name: "p0", WatermarkMs: window + rev*20_000, Read: count + 1},
		{Name: "p1", WatermarkMs: window, Idle: rev%2 == 0, Read: 2},
	}})
}

func TestSnapshotJSON(t *testing.T) {
	f := newFixture(t)
	f.write(t, 1, model.Early, 100_000_000, 1)
	f.write(t, 2, model.OnTime, 150_000_000, 2)
	s := f.mon.Snapshot(context.Background())
	if len(s.Windows) != 1 || s.Windows[0].State != "ON_TIME" || s.Windows[0].Revenue != "150.000000" || len(s.Windows[0].Revisions) != 2 {
		t.Fatalf("windows: %+v", s.Windows)
	}
	if !s.Figures || s.Read != 6 || s.Conserved {
		t.Errorf("figures: read %d conserved %v (read 6 != 2+1+1+1 must not hold)", s.Read, s.Conserved)
	}
	// The pipeline watermark is the minimum over active partitions: p1 is
	// idle at revision 2.
	if want := model.FormatTime(window + 40_000); s.Watermark != want {
		t.Errorf("watermark %s, want %s", s.Watermark, want)
	}
	// /api/live carries every figure as a number too, for scripts and
	// dashboards: no display string to parse.
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		AtMs        int64  `json:"at_ms"`
		ElapsedMs   *int64 `json:"elapsed_ms"`
		WatermarkMs int64  `json:"watermark_ms"`
		Partitions  []struct {
			Name     string `json:"name"`
			BehindMs int64  `json:"behind_ms"`
		} `json:"partitions"`
		Windows []struct {
			StartMs       int64 `json:"window_start_ms"`
			EndMs         int64 `json:"window_end_ms"`
			RevenueMicros int64 `json:"revenue_micros"`
			Revisions     []struct {
				RevenueMicros int64 `json:"revenue_micros"`
			} `json:"revisions"`
		} `json:"windows"`
	}
	if err := json.Unmarshal(raw, &api); err != nil {
		t.Fatal(err)
	}
	if api.AtMs < window || api.ElapsedMs == nil || api.WatermarkMs != window+40_000 ||
		len(api.Partitions) != 2 || api.Partitions[0].BehindMs != api.AtMs-(window+40_000) {
		t.Errorf("numeric figures: %s", raw)
	}
	if w := api.Windows; len(w) != 1 || w[0].StartMs != window || w[0].EndMs != window+60_000 || w[0].RevenueMicros != 150_000_000 ||
		len(w[0].Revisions) != 2 || w[0].Revisions[0].RevenueMicros != 100_000_000 {
		t.Errorf("numeric windows: %s", raw)
	}
	var b strings.Builder
	if err := live.WriteTable(&b, s, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"window 1m\n", "12:00:00–12:01:00", "150.000000", "ON_TIME", "idle", "read 6 != counted 2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestAddr(t *testing.T) {
	for in, want := range map[string]string{"8080": "127.0.0.1:8080", "0.0.0.0:9000": "0.0.0.0:9000", "localhost:1": "localhost:1"} {
		if got, err := live.Addr(in); err != nil || got != want {
			t.Errorf("Addr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "70000", "host", "host:port", ":x"} {
		if _, err := live.Addr(bad); err == nil {
			t.Errorf("Addr(%q) accepted", bad)
		}
	}
}

// TestPageInChromium loads the page in a real headless Chromium while the
// test writes a window's revisions into the sink, and checks that the page
// shows the window EARLY and then FINAL (it polls by itself), that its
// JSON matches, and that the browser reported no error.
func TestPageInChromium(t *testing.T) {
	if _, err := os.Stat(cdp.Chromium); err != nil {
		t.Skipf("%s not found (apt-get install chromium): cannot test the live page", cdp.Chromium)
	}
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	f := newFixture(t)
	srv, err := live.Serve("127.0.0.1:0", f.mon)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := cdp.Start(ctx, t.TempDir(), 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Navigate(srv.URL()); err != nil {
		t.Fatal(err)
	}
	var title string
	if err := b.Eval("document.title", &title); err != nil || title != "hourly revenue · live page test" {
		t.Fatalf("title %q, %v", title, err)
	}

	// stateShown waits until the page shows the window in state want.
	stateShown := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		var got string
		for time.Now().Before(deadline) {
			if err := b.Eval(`(document.querySelector("#wins tr[data-window='2026-11-30T12:00:00Z']")||{dataset:{}}).dataset.state||""`, &got); err != nil {
				t.Fatal(err)
			}
			if got == want {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("the page shows the window as %q, want %q; errors: %v", got, want, b.Errors())
	}
	f.write(t, 1, model.Early, 100_000_000, 1)
	stateShown("EARLY")
	f.write(t, 2, model.OnTime, 150_000_000, 2)
	stateShown("ON_TIME")
	f.write(t, 3, model.Late, 170_000_000, 3)
	f.write(t, 4, model.Final, 1_234_567_885_000, 3) // 1,234,567.885 shows rounded half up
	stateShown("FINAL")

	var shown struct {
		Badges   []string
		Idle     string
		Identity string
		Window   string
		Revenue  string
	}
	if err := b.Eval(`({badges: [...document.querySelectorAll("#wins ol.revs .badge")].map(e => e.textContent),
		idle: document.querySelector("#parts tr[data-partition='p1'] td:nth-child(4)").textContent,
		identity: document.getElementById("identity").textContent,
		window: document.querySelector("#wins tr td.win").textContent,
		revenue: document.querySelector("#wins tr td.money").textContent})`, &shown); err != nil {
		t.Fatal(err)
	}
	// Money with two decimals and separators, the window with its date.
	if shown.Window != "2026-11-30 12:00–12:01" || shown.Revenue != "1,234,567.89" {
		t.Errorf("window shown %q, revenue %q; want 2026-11-30 12:00–12:01 and 1,234,567.89", shown.Window, shown.Revenue)
	}
	if got := strings.Join(shown.Badges, " "); got != "EARLY ON_TIME LATE FINAL" {
		t.Errorf("revisions shown: %s", got)
	}
	if shown.Idle != "idle" || !strings.Contains(shown.Identity, "read 7 != counted 3") {
		t.Errorf("partition p1 shown %q, identity %q", shown.Idle, shown.Identity)
	}

	// The JSON the page polls agrees.
	resp, err := http.Get(srv.URL() + "api/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s live.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if len(s.Windows) != 1 || s.Windows[0].State != "FINAL" || s.Windows[0].Revision != 4 {
		t.Errorf("api/live windows: %+v", s.Windows)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(errs, "\n"))
	}
}
