package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/cdp"
	"github.com/revenue-stream/hourly/triggers"
)

// fixture is a monitor over a real SQLite sink that the test writes
// revisions into, as the job's sink writer would, with figures the test
// sets.
type fixture struct {
	db      *sqlite.SQLite
	path    string
	mon     *live.Monitor
	figures atomic.Pointer[live.Figures]
}

func newFixture(t *testing.T) *fixture { return newFixtureAt(t, nil) }

// newFixtureAt is newFixture with the monitor's clock now (nil: the
// wall clock, for a browser that polls in real time).
func newFixtureAt(t *testing.T, now func() time.Time) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "revenue.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db, path: path}
	f.mon = &live.Monitor{Title: "hourly revenue · live page test", Sink: sink.Spec{Scheme: sink.SchemeSQLite, Path: path},
		Settings: []report.Figure{{Name: "window", Value: "1m"}}, Triggers: triggers.Policy{Window: time.Minute}, MaxAge: time.Millisecond, Now: now}
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
	if _, err := f.db.Write(context.Background(), sink.Batch{Rows: []model.Row{row}}); err != nil {
		t.Fatal(err)
	}
	c := metrics.Counts{Read: count + 4, Counted: count, Duplicates: 1, Conflicts: 1, TooLate: 1,
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
		if got, err := live.Addr("--ui", in); err != nil || got != want {
			t.Errorf("Addr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "70000", "host", "host:port", ":x"} {
		if _, err := live.Addr("--ui", bad); err == nil {
			t.Errorf("Addr(%q) accepted", bad)
		}
	}
}

// TestPageInChromium loads the page in a real headless Chromium while the
// test writes a window's revisions and audit records into the sink, and
// checks that the page shows the window EARLY (with its countdowns) and
// then FINAL (it polls by itself), draws the time series, fills the audit
// drill-down, that its JSON matches, that the browser reported no error,
// and that a final state shows in its banner and stays when the launcher
// has gone.
func TestPageInChromium(t *testing.T) {
	if _, err := os.Stat(cdp.Chromium); err != nil {
		t.Skipf("%s not found (apt-get install chromium): cannot test the live page", cdp.Chromium)
	}
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	f := newFixture(t)
	f.mon.AuditEvery = time.Millisecond
	l, err := live.Listen("--ui", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := live.Serve(l, f.mon)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := cdp.Start(ctx, cdp.ProfileDir(t), 1280, 900)
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

	// waitFor waits until the expression is true on the page: the page
	// polls /api/live in real time, so the test polls the page.
	waitFor := func(what, expr string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			var ok bool
			if err := b.Eval(expr, &ok); err != nil {
				t.Fatal(err)
			}
			if ok {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("the page never showed %s; errors: %v", what, b.Errors())
	}
	// stateShown waits until the page shows the window in state want.
	stateShown := func(want string) {
		t.Helper()
		waitFor("the window as "+want, `((document.querySelector("#wins tr[data-window='2026-11-30T12:00:00Z']")||{dataset:{}}).dataset.state||"") === "`+want+`"`)
	}
	f.write(t, 1, model.Early, 100_000_000, 1)
	stateShown("EARLY")
	// The pipeline watermark is 12:00:00 (p0 at 12:00:20, p1 at 12:00:00):
	// a minute to go for ON_TIME and, with no allowed lateness, for FINAL.
	waitFor("the countdowns", `[...document.querySelectorAll("#wins td.next div")].map(d => d.dataset.next + ": " + d.textContent).join(" | ") ===
		"ON_TIME: ON_TIME watermark needs +1m00s | FINAL: FINAL watermark needs +1m00s"`)
	audit := sink.Batch{Audit: sink.Audit{
		TooLate: []model.TooLate{{Position: "p0/f-00000001.jsonl:7", EventID: "late-1", EventTime: window - 50_000,
			Payload: []byte(`{"event_id":"late-1"}`), Reason: model.ReasonWindowClosed}},
		Conflicts: []model.Conflict{{Position: "p1/f-00000001.jsonl:3", EventID: "dup-1", FirstFingerprint: 1, ConflictingFingerprint: 2,
			Payload: []byte(`{"event_id":"dup-1","amount":"6.00"}`)}},
		Quarantined: []model.Quarantined{{Position: "p2/f-00000001.jsonl:9", Payload: []byte("not json <b>"), Reason: "bad_json"}},
	}}
	if _, err := f.db.Write(context.Background(), audit); err != nil {
		t.Fatal(err)
	}
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

	// The revision history: what each revision added, when the sink wrote
	// it (fixed here: the sink stamps its own clock) and what caused it.
	for rev, at := range []string{"2026-11-30T12:00:30.000Z", "2026-11-30T12:01:17.200Z", "2026-11-30T12:02:05.000Z", "2026-11-30T12:04:20.000Z"} {
		f.setWrittenAt(t, int64(rev+1), at)
	}
	waitFor("the write times", `[...document.querySelectorAll("#wins ol.revs li")].map(li => li.dataset.written).join(" ") ===
		"2026-11-30T12:00:30.000Z 2026-11-30T12:01:17.200Z 2026-11-30T12:02:05.000Z 2026-11-30T12:04:20.000Z"`)
	var history [][]string
	if err := b.Eval(`[...document.querySelectorAll("#wins ol.revs li")].map(li => [li.dataset.cause, li.querySelector(".add").textContent, li.querySelector(".why").textContent])`, &history); err != nil {
		t.Fatal(err)
	}
	wantHistory := [][]string{
		{"early_tick", "(+1 ev, +100.00)", "· written 12:00:30.000, 30.0s before the end · EARLY tick"},
		{"watermark", "(+1 ev, +50.00)", "· written 12:01:17.200, end +17.2s · watermark passed the end"},
		{"late_data", "(+1 ev, +20.00)", "· written 12:02:05.000, end +1m05s · late data"},
		{"closed", "(+0 ev, +1,234,397.89)", "· written 12:04:20.000, end +3m20s · watermark passed end + lateness"},
	}
	if !reflect.DeepEqual(history, wantHistory) {
		t.Errorf("revision history shown:\n%q\nwant\n%q", history, wantHistory)
	}

	// The time series: a rate line for read and each verdict, the pipeline
	// watermark's lag, and one lag line per partition, each with points.
	waitFor("the time series drawn", `[...document.querySelectorAll("#series figure.chart")].length === 8 &&
		[...document.querySelectorAll("#series figure.chart")].every(f => Number(f.dataset.points) >= 2)`)
	var series struct {
		Kinds []string
		Lines []string
		Keys  string
	}
	if err := b.Eval(`({kinds: [...document.querySelectorAll("#series figure.chart")].map(f => f.dataset.series),
		lines: [...document.querySelectorAll("#lags figure[data-series='partition_lag'] polyline")].map(p => p.dataset.name),
		keys: document.querySelector("#lags .keys").textContent})`, &series); err != nil {
		t.Fatal(err)
	}
	if want := []string{"read", "counted", "duplicates", "conflicts", "quarantined", "too_late", "watermark_lag", "partition_lag"}; !slices.Equal(series.Kinds, want) {
		t.Errorf("charts %v, want %v", series.Kinds, want)
	}
	if !slices.Contains(series.Lines, "p0") || !slices.Contains(series.Lines, "p1") || !strings.Contains(series.Keys, "p0 ") {
		t.Errorf("partition lag lines %v, keys %q", series.Lines, series.Keys)
	}
	// The audit drill-down: a row in each table, with what it is about.
	waitFor("the audit records", `document.querySelectorAll("#tl tr, #cf tr, #qu tr").length === 3`)
	var drill struct {
		TooLate, Conflict, Quarantined []string
		Summary                        string
		Open                           bool
	}
	if err := b.Eval(`({tooLate: [...document.querySelectorAll("#tl td")].map(d => d.textContent),
		conflict: [...document.querySelectorAll("#cf td")].map(d => d.textContent),
		quarantined: [...document.querySelectorAll("#qu td")].map(d => d.textContent),
		summary: document.getElementById("drill-sum").textContent,
		open: document.getElementById("drill-details").open})`, &drill); err != nil {
		t.Fatal(err)
	}
	// 11:59:10 is in [11:59, 12:00), closed at 12:00:00 (no lateness, no
	// bound): at least 50 s late.
	if want := []string{"p0/f-00000001.jsonl:7", "late-1", "2026-11-30T11:59:10Z", "2026-11-30 11:59–12:00, closed 12:00:00", "≥ 50.0s", `{"event_id":"late-1"}`}; !slices.Equal(drill.TooLate, want) {
		t.Errorf("too-late row %q\nwant %q", drill.TooLate, want)
	}
	if want := []string{"p1/f-00000001.jsonl:3", "dup-1", "0000000000000001 → 0000000000000002", `{"event_id":"dup-1","amount":"6.00"}`}; !slices.Equal(drill.Conflict, want) {
		t.Errorf("conflict row %q\nwant %q", drill.Conflict, want)
	}
	if want := []string{"p2/f-00000001.jsonl:9", "bad_json", "not json <b>"}; !slices.Equal(drill.Quarantined, want) {
		t.Errorf("quarantined row %q\nwant %q (as text)", drill.Quarantined, want)
	}
	if !strings.HasPrefix(drill.Summary, "1 too late · 1 conflicts · 1 quarantined · read ") || !strings.Contains(drill.Summary, " idle episode") || drill.Open {
		t.Errorf("drill-down summary %q, open %v: want the counts and idle episodes, collapsed", drill.Summary, drill.Open)
	}

	// The idle episodes: p1, idle at the even revisions, comes back; the
	// job counted two moves to idle.
	fig := *f.figures.Load()
	fig.Partitions = []live.Partition{fig.Partitions[0], {Name: "p1", WatermarkMs: window, Read: 2}}
	fig.Counts.Counters = map[string]int64{"idle_transitions_p1": 2}
	f.figures.Store(&fig)
	waitFor("an idle episode ended", `document.querySelector("#idle tr[data-partition='p1'][data-ongoing='false']") !== null`)
	var idle struct {
		Cells []string
		Moves string
	}
	if err := b.Eval(`({cells: [...document.querySelectorAll("#idle tr[data-partition='p1'][data-ongoing='false'] td")].map(d => d.textContent),
		moves: document.getElementById("idle-moves").textContent})`, &idle); err != nil {
		t.Fatal(err)
	}
	clock := regexp.MustCompile(`^\d\d:\d\d:\d\d$`)
	if c := idle.Cells; len(c) != 6 || c[0] != "p1" || !regexp.MustCompile(`^\d\d:\d\d:\d\d \(active at \d\d:\d\d:\d\d\)$`).MatchString(c[1]) ||
		!clock.MatchString(c[2]) || !regexp.MustCompile(`^(\d+ms|\d+\.\ds|\d+m\d\ds)$`).MatchString(c[3]) || c[4] != "2026-11-30T12:00:00Z" || c[5] != "+0" {
		t.Errorf("idle episode shown %q; want p1, from (active at), until, how long, the watermark 12:00:00 it held, +0 records", c)
	}
	if idle.Moves != "p0 0, p1 2" {
		t.Errorf("moves to idle shown %q, want p0 0, p1 2", idle.Moves)
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
	if s.Series == nil || len(s.Series.AtMs) < 3 || s.Audit == nil || len(s.Audit.TooLate) != 1 {
		t.Errorf("api/live series %+v, audit %+v", s.Series, s.Audit)
	}

	// The job ends: its final state shows in a banner, and the title.
	f.mon.SetState("DONE")
	waitFor("the final state", `!document.getElementById("ended").hidden && document.getElementById("state").textContent === "DONE"`)
	var ended struct {
		Class, Text, Title string
	}
	if err := b.Eval(`({class: document.getElementById("ended").className, text: document.getElementById("ended").textContent, title: document.title})`, &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Class != "ended DONE" || !strings.HasPrefix(ended.Text, "The job has ended: DONE at 20") || ended.Title != "DONE · hourly revenue · live page test" {
		t.Errorf("final state shown: class %q, text %q, title %q", ended.Class, ended.Text, ended.Title)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(errs, "\n"))
	}
	// The launcher goes away (the page's fetches now fail, and say so): the
	// final state stays in view.
	srv.Close()
	waitFor("that the launcher is gone", `document.getElementById("meta").textContent.startsWith("no answer from the launcher")`)
	if err := b.Eval(`document.getElementById("ended").hidden ? "" : document.getElementById("ended").textContent`, &ended.Text); err != nil || !strings.Contains(ended.Text, "DONE") {
		t.Errorf("after the launcher went, the banner shows %q (%v)", ended.Text, err)
	}
}
