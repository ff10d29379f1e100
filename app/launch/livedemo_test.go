package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/cdp"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// TestLiveDemo runs the live demo for a bounded time with fast settings
// (10 s windows, EARLY every second, 30 s of allowed lateness) and checks
// what a user is meant to see: at least one window whose changelog goes
// EARLY → ON_TIME → LATE → FINAL, no changelog going backwards, too-late,
// conflict and quarantine rows in the audit tables (as many as the job
// counted), every partition read, and conservation at the stop.
func TestLiveDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the live demo runs for a minute")
	}
	docs, derr := filepath.Abs(filepath.Join("..", "..", "docs"))
	if derr != nil {
		t.Fatal(derr)
	}
	// The live demo's own folder and sink names, in a folder of the test.
	t.Chdir(t.TempDir())
	run, watch := 65*time.Second, 58*time.Second
	if *updateLive {
		// Long enough for p3's second silence, for a picture with an idle
		// partition and FINAL windows.
		run, watch = 115*time.Second, 108*time.Second
	}
	o, err := Parse([]string{"--demo=live", "--duration=" + run.String(), "--window=10s", "--early=1s", "--allowed-lateness=30s",
		"--ooo-bound=2s", "--idle-timeout=4s"})
	if err != nil {
		t.Fatal(err)
	}
	o.UI = "127.0.0.1:" + strconv.Itoa(freePort(t))
	var out bytes.Buffer
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Run(context.Background(), o, &out)
		done <- result{sum, err}
	}()
	page := watchPage(t, "http://"+o.UI+"/", watch)
	res := <-done
	sum, err := res.sum, res.err
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if page != nil {
		page.check(t, docs)
	}
	t.Logf("summary:\n%s", out.String())
	if !strings.Contains(out.String(), "Live demo: 4 partitions") || !strings.Contains(out.String(), "window 10s · early 1s · allowed-lateness 30s") {
		t.Errorf("no banner with the settings:\n%s", out.String())
	}
	// --duration is a planned stop: DONE, and said so.
	if sum.State != StateDone || !sum.Planned || !sum.Conserved || !strings.Contains(out.String(), ": DONE in ") ||
		!strings.Contains(out.String(), "(stopped as planned by --duration:") {
		t.Errorf("state %s, planned %v, conserved %v: %s", sum.State, sum.Planned, sum.Conserved, sum.Identity)
	}
	c := sum.Counts
	if got := slices.Sorted(maps.Keys(c.ReadBy)); !slices.Equal(got, []string{"p0", "p1", "p2", "p3"}) {
		t.Errorf("partitions read: %v", c.ReadBy)
	}

	sink := sqliteOf(t, Options{Sink: o.Sink})
	changelog, err := changelogEntries(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	checkMonotone(t, changelog)
	lifecycles := map[string][]string{}
	for _, r := range changelog {
		states := lifecycles[r.Key()]
		if len(states) == 0 || states[len(states)-1] != r.State.String() {
			lifecycles[r.Key()] = append(states, r.State.String())
		}
	}
	var full []string
	for key, states := range lifecycles {
		if slices.Equal(states, []string{"EARLY", "ON_TIME", "LATE", "FINAL"}) {
			full = append(full, key)
		}
	}
	if len(full) == 0 {
		var all []string
		for key, states := range lifecycles {
			all = append(all, key+": "+strings.Join(states, " → "))
		}
		slices.Sort(all)
		t.Errorf("no window went EARLY → ON_TIME → LATE → FINAL:\n%s", strings.Join(all, "\n"))
	}
	t.Logf("%d windows went EARLY → ON_TIME → LATE → FINAL: %v", len(full), full)

	late, err := sinktest.TooLate(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	conflicts, err := sinktest.Conflicts(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	quarantined, err := sinktest.Quarantined(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		table   string
		rows    int
		counted int64
	}{{"too_late_events", len(late), c.TooLate}, {"conflict_events", len(conflicts), c.Conflicts}, {"quarantined_events", len(quarantined), c.Quarantined}} {
		if a.rows == 0 || int64(a.rows) != a.counted {
			t.Errorf("%s holds %d rows; the job counted %d (want as many, and some)", a.table, a.rows, a.counted)
		}
	}
	for _, r := range late {
		if r.Reason != model.ReasonWindowClosed {
			t.Errorf("too-late row %s: reason %q", r.Position, r.Reason)
		}
	}
	if c.Duplicates == 0 || c.Rows["LATE"] == 0 || c.Rows["FINAL"] == 0 {
		t.Errorf("duplicates %d, LATE rows %d, FINAL rows %d: want some of each", c.Duplicates, c.Rows["LATE"], c.Rows["FINAL"])
	}
}

// TestLiveDemoFlags checks the live demo's defaults and that a flag given
// wins over them.
func TestLiveDemoFlags(t *testing.T) {
	o, err := Parse([]string{"--demo=live", "--early=2s", "--ui=8080", "--duration=5m"})
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pipeline
	got := fmt.Sprintln(o.Sink, p.Triggers.Window, p.Triggers.Early, p.Triggers.AllowedLateness, p.Watermark.OutOfOrderBound,
		p.Watermark.IdleTimeout, o.Duration, o.UI)
	if want := "sqlite:demo-live.db 1m0s 2s 3m0s 10s 15s 5m0s 8080\n"; got != want {
		t.Errorf("live demo settings = %s want %s", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the live demo's defaults are refused: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--demo=soon"}, `launch: --demo: "soon": want replay or live`},
		{[]string{"--demo=live", "--source=."}, `launch: --demo=live writes its own source folder (./demo-live): it takes no --source`},
		{[]string{"--demo=live", "--allowed-lateness=30s"}, `launch: --demo=live: live feed: --allowed-lateness 30s leaves no room for late uploads: it must exceed window + 3 x ooo-bound (1m30s)`},
		{[]string{"--duration=1m"}, `launch: --duration stops a streaming run (--follow, Pub/Sub or --demo=live); a replay ends by itself`},
		{[]string{"--demo=live", "--duration=-1s"}, `launch: --duration must not be negative, got -1s`},
		{[]string{"--demo=live", "--ui=70000"}, `launch: --ui=70000: invalid port: want 1 to 65535`},
		{[]string{"--demo=live", "--ui=host"}, `launch: --ui=host: want PORT or HOST:PORT`},
	} {
		wantRefused(t, tc.args, tc.want)
	}
}

var updateLive = flag.Bool("update-live", false, "TestLiveDemo: write the live page's screenshots to docs/live.png (FINAL windows, an idle partition), docs/live-early.png and docs/live-late.png")

// pageWatch is what a headless Chromium saw of the live page during a job.
type pageWatch struct {
	// seen holds each window's states in the order the page showed them.
	seen map[string][]string
	// idle holds the partitions shown idle at some point; watermarks those
	// shown with a watermark.
	idle, watermarks map[string]bool
	// charts holds the most points each time-series chart drew; audit the
	// most rows each table of the audit drill-down showed; countdown
	// whether an EARLY window showed how far the watermark had to go.
	charts, audit map[string]int
	countdown     bool
	errors        []string
	shot          string
	// moments holds the pictures of earlier moments: the first window
	// EARLY, the first LATE (docs/live-early.png, docs/live-late.png).
	moments map[string]string
}

// watchPage opens the live page in headless Chromium and reads the state of
// every window it shows, twice a second, for the given time (the page
// refreshes itself), then takes a screenshot. It returns nil when Chromium
// is not installed.
func watchPage(t *testing.T, url string, watch time.Duration) *pageWatch {
	t.Helper()
	if _, err := os.Stat(cdp.Chromium); err != nil {
		t.Logf("%s not found: the live page is not watched (app/live's TestPageInChromium skips too)", cdp.Chromium)
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), watch+time.Minute)
	defer cancel()
	b, err := cdp.Start(ctx, cdp.ProfileDir(t), 1280, 1400)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for {
		// The page is served once the job's set-up is done.
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the live page %s never came up", url)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := b.Navigate(url); err != nil {
		t.Fatal(err)
	}
	w := &pageWatch{seen: map[string][]string{}, idle: map[string]bool{}, watermarks: map[string]bool{}, charts: map[string]int{},
		audit: map[string]int{}, shot: filepath.Join(t.TempDir(), "live.png"), moments: map[string]string{}}
	shot := false
	for time.Since(start) < watch {
		var shown struct {
			States    map[string]string
			Idle      bool
			Parts     [][3]string
			Charts    map[string]int
			Audit     map[string]int
			Countdown bool
		}
		if err := b.Eval(`({states: Object.fromEntries([...document.querySelectorAll("#wins tr")].map(r => [r.dataset.window, r.dataset.state])),
			idle: document.querySelector("#parts td.idle") !== null,
			parts: [...document.querySelectorAll("#parts tr")].map(r => [r.dataset.partition, r.children[1].textContent, r.children[3].textContent]),
			charts: Object.fromEntries([...document.querySelectorAll("#series figure.chart")].map(f => [f.dataset.series, Number(f.dataset.points)])),
			audit: Object.fromEntries(["tl", "cf", "qu"].map(id => [id, document.querySelectorAll("#" + id + " tr").length])),
			countdown: [...document.querySelectorAll("#wins tr[data-state='EARLY'] td.next div[data-next='ON_TIME']")].some(d => d.textContent.includes("watermark needs +"))})`, &shown); err != nil {
			t.Fatal(err)
		}
		for k, n := range shown.Charts {
			w.charts[k] = max(w.charts[k], n)
		}
		for k, n := range shown.Audit {
			w.audit[k] = max(w.audit[k], n)
		}
		w.countdown = w.countdown || shown.Countdown
		for _, p := range shown.Parts {
			w.watermarks[p[0]] = w.watermarks[p[0]] || strings.HasPrefix(p[1], "20")
			w.idle[p[0]] = w.idle[p[0]] || p[2] == "idle"
		}
		final := false
		for win, st := range shown.States {
			if seq := w.seen[win]; len(seq) == 0 || seq[len(seq)-1] != st {
				w.seen[win] = append(seq, st)
			}
			final = final || st == "FINAL" && slices.Contains(w.seen[win], "EARLY")
		}
		for _, m := range []string{"EARLY", "LATE"} {
			if _, done := w.moments[m]; !done && slices.Contains(slices.Collect(maps.Values(shown.States)), m) && shown.Charts["read"] >= 2 {
				path := filepath.Join(filepath.Dir(w.shot), "live-"+strings.ToLower(m)+".png")
				if err := b.Screenshot(path); err != nil {
					t.Fatal(err)
				}
				w.moments[m] = path
			}
		}
		if !shot && final && shown.Idle {
			// The picture with everything in it: an idle partition, and
			// windows in every state, one of them FINAL after all others.
			if err := b.Screenshot(w.shot); err != nil {
				t.Fatal(err)
			}
			shot = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Before the job ends: afterwards the page's polls fail, as they should.
	w.errors = b.Errors()
	if !shot {
		if err := b.Screenshot(w.shot); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// check asserts that the page showed a window first EARLY and later FINAL,
// its time series, audit records and countdowns, with no browser error,
// and writes the screenshot into docs with -update-live.
func (w *pageWatch) check(t *testing.T, docs string) {
	t.Helper()
	var early2final []string
	for win, seq := range w.seen {
		if i, j := slices.Index(seq, "EARLY"), slices.Index(seq, "FINAL"); i >= 0 && j > i {
			early2final = append(early2final, win+": "+strings.Join(seq, " → "))
		}
	}
	if len(early2final) == 0 {
		t.Errorf("the live page never showed a window going from EARLY to FINAL: %v", w.seen)
	}
	t.Logf("the live page showed: %v", early2final)
	// The watermarks and idleness come from the job's gauges: every
	// partition had a watermark, and p3 (the feed's silent one) was idle.
	if !w.idle["p3"] || len(w.watermarks) != 4 || slices.Contains(slices.Collect(maps.Values(w.watermarks)), false) {
		t.Errorf("partitions shown: with a watermark %v, idle %v; want p0-p3 with watermarks, p3 idle", w.watermarks, w.idle)
	}
	// The time series drew every chart, the audit drill-down showed rows
	// of each table, and an EARLY window its countdown to ON_TIME.
	for _, k := range []string{"read", "counted", "duplicates", "conflicts", "quarantined", "too_late", "watermark_lag", "partition_lag"} {
		if w.charts[k] < 2 {
			t.Errorf("the %s chart drew %d points at most: %v", k, w.charts[k], w.charts)
		}
	}
	if w.audit["tl"] == 0 || w.audit["cf"] == 0 || w.audit["qu"] == 0 {
		t.Errorf("audit drill-down rows (too late, conflicts, quarantined): %v; want some of each", w.audit)
	}
	if !w.countdown {
		t.Errorf("no EARLY window showed how far the watermark had to go for ON_TIME")
	}
	t.Logf("the live page's charts drew at most %v points, its audit drill-down showed at most %v rows", w.charts, w.audit)
	if len(w.errors) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(w.errors, "\n"))
	}
	data, err := os.ReadFile(w.shot)
	if err != nil || len(data) < 20<<10 {
		t.Errorf("screenshot: %d bytes, %v: the page looks empty", len(data), err)
	}
	if len(w.moments) != 2 {
		t.Errorf("pictures of the page's moments: %v, want one with a window EARLY and one with a window LATE", w.moments)
	}
	if *updateLive {
		if err := os.WriteFile(filepath.Join(docs, "live.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range w.moments {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(docs, filepath.Base(path)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPageStaysUpUntilCtrlC: with a person at the terminal, a run with --ui
// whose job ends by itself (here at --duration) keeps serving its page, in
// its final state, until Ctrl-C (the run's context); without one (a
// script), Run returns at once, as every other test here shows.
func TestPageStaysUpUntilCtrlC(t *testing.T) {
	keep := keepPage
	keepPage = func() bool { return true }
	t.Cleanup(func() { keepPage = keep })
	o := options(t, writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100")))
	o.Follow, o.Duration = true, 2*time.Second
	o.PollInterval, o.QuietPeriod = 100*time.Millisecond, 300*time.Millisecond
	o.UI = "127.0.0.1:" + strconv.Itoa(freePort(t))
	job := runInBackground(t, o)
	// The page reports the final state: the job has ended, Run has not.
	deadline := time.Now().Add(time.Minute)
	for {
		var s struct{ State string }
		if resp, err := http.Get("http://" + o.UI + "/api/live"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
		}
		if s.State == StateDone {
			break
		}
		if job.ended() {
			job.fail(t, "Run returned while a person was at the terminal")
		}
		if time.Now().After(deadline) {
			job.fail(t, "the page never showed DONE")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job.ended() {
		job.fail(t, "Run returned while a person was at the terminal")
	}
	sum, _ := job.stopAndWait(t, 10*time.Second) // Ctrl-C
	if sum.State != StateDone || !sum.Planned {
		t.Errorf("state %s, planned %v: want DONE as planned", sum.State, sum.Planned)
	}
	if _, err := http.Get("http://" + o.UI + "/api/live"); err == nil {
		t.Errorf("the page is still served after Ctrl-C")
	}
}
