package report_test

import (
	"cmp"
	"context"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// go test ./app/report -run TestScreenshot -update-demo regenerates the picture
// the README shows.
var updateDemo = flag.Bool("update-demo", false, "write the demo report's screenshot to docs/report.png")

const chromium = "/usr/bin/chromium"

// demoRun builds a realistic Run from the demo log (internal/gen.Demo): the
// traces and delays come from TraceFolder, the counts and FINAL totals from
// the oracle, and the reconcile differences from the oracle's Distinct
// totals (what the stream could not count because it came too late).
//
// The revision histories are reconstructed, not streamed: the oracle only
// knows FINAL totals. An event counts as LATE when its partition watermark
// had already passed its window's end when it arrived (the pipeline
// watermark, a minimum over partitions, would make a few of them on time);
// each partition-watermark hour in which late events arrived makes one LATE
// revision, and the ON_TIME row holds the rest.
func demoRun(t testing.TB) report.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	cfg := gen.Demo()
	if _, err := gen.Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	now := cfg.Start.Add(cfg.Span + time.Hour) // after the last arrival: no event is in the future
	s := oracle.DefaultSettings(now)
	res, err := oracle.Replay(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	traces, delays, err := report.TraceFolder(dir, s.Watermark, s.Event, now)
	if err != nil {
		t.Fatal(err)
	}

	counts := metrics.Counts{
		Read: int64(res.Read), Counted: int64(res.Counted), Duplicates: int64(res.Duplicates),
		Conflicts: int64(len(res.Conflicts)), Quarantined: int64(len(res.Quarantined)), TooLate: int64(len(res.TooLate)),
		QuarantinedBy: map[string]int64{}, Rows: map[string]int64{},
	}
	for _, q := range res.Quarantined {
		counts.QuarantinedBy[q.Reason]++
	}

	// Late arrivals per window, by the partition-watermark hour they came in.
	hour := time.Hour.Milliseconds()
	late := map[int64]map[int64]oracle.Total{}
	counted := map[string]bool{}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		st := rawlog.NewStamper(s.Watermark, s.Event, now.UnixMilli())
		if _, err := rawlog.Scan(dir, p, s.Event.MaxLine, now.UnixMilli(), func(rec model.Record) error {
			ev, q := st.Stamp(&rec)
			ws := s.Triggers.WindowStart(ev.EventTime)
			if q != nil || s.Triggers.Closed(ws, rec.WatermarkBefore) || counted[ev.EventID] {
				return nil
			}
			counted[ev.EventID] = true
			if w := rec.WatermarkBefore; w != model.NoWatermark && w >= s.Triggers.WindowEnd(ws) {
				if late[ws] == nil {
					late[ws] = map[int64]oracle.Total{}
				}
				tot := late[ws][w-w%hour]
				late[ws][w-w%hour] = oracle.Total{RevenueMicros: tot.RevenueMicros + ev.AmountMicros, Count: tot.Count + 1}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	var changelog []model.Row
	keys := slices.SortedFunc(maps.Keys(res.Final), func(a, b oracle.Key) int {
		return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
	})
	for _, k := range keys {
		final := res.Final[k]
		var lateSum oracle.Total
		for _, v := range late[k.WindowStart] {
			lateSum.RevenueMicros += v.RevenueMicros
			lateSum.Count += v.Count
		}
		rev := int64(0)
		add := func(st model.ResultState, revenue, count int64) {
			rev++
			changelog = append(changelog, model.Row{
				WindowStart: k.WindowStart, WindowEnd: s.Triggers.WindowEnd(k.WindowStart), Dims: k.Dims,
				RevenueMicros: revenue, EventCount: count, Revision: rev, State: st, Writer: "stream",
			})
			counts.Rows[st.String()]++
		}
		total := oracle.Total{RevenueMicros: final.RevenueMicros - lateSum.RevenueMicros, Count: final.Count - lateSum.Count}
		if total.Count > 0 {
			add(model.OnTime, total.RevenueMicros, total.Count)
		}
		for _, f := range slices.Sorted(maps.Keys(late[k.WindowStart])) {
			v := late[k.WindowStart][f]
			total.RevenueMicros += v.RevenueMicros
			total.Count += v.Count
			add(model.Late, total.RevenueMicros, total.Count)
		}
		add(model.Final, final.RevenueMicros, final.Count)
	}

	rc := &report.Reconcile{RunID: "demo-reconcile", WindowsChecked: len(res.Distinct), Source: "demo log", Sink: "sqlite:revenue.db",
		Range: "every FINAL window", Tolerance: "0.000000", ByClass: map[string]int{"too_late": 0, "missing_window": 0, "unexplained": 0}}
	for _, k := range slices.SortedFunc(maps.Keys(res.Distinct), func(a, b oracle.Key) int {
		return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
	}) {
		want, got := res.Distinct[k], res.Final[k]
		if want == got {
			continue
		}
		class := "too_late"
		if _, ok := res.Final[k]; !ok {
			class = "missing_window"
		}
		delta := want.RevenueMicros - got.RevenueMicros
		rc.Diffs = append(rc.Diffs, report.Diff{
			WindowStart: model.FormatTime(k.WindowStart), Dims: k.Dims,
			Streamed: model.FormatMicros(got.RevenueMicros), Recomputed: model.FormatMicros(want.RevenueMicros), Delta: report.Signed(delta),
			StreamedMicros: got.RevenueMicros, RecompMicros: want.RevenueMicros, DeltaMicros: delta,
			StreamedCount: got.Count, RecompCount: want.Count, DeltaCount: want.Count - got.Count,
			TooLate: model.FormatMicros(delta), TooLateCount: want.Count - got.Count, Classification: class, Material: true,
		})
		rc.ByClass[class]++
		rc.TotalDeltaMicros += delta
		rc.TotalDeltaCount += want.Count - got.Count
	}
	rc.WindowsDiffering, rc.Material, rc.TotalDelta = len(rc.Diffs), len(rc.Diffs), report.Signed(rc.TotalDeltaMicros)
	if rc.Material > 0 {
		rc.ExitCode = 3 // every difference explained (too-late events), none applied
	}

	started := time.Date(2026, 11, 6, 9, 0, 0, 0, time.UTC)
	return report.Run{
		Title:    "Demo replay: internal/gen.Demo()",
		Started:  started,
		Finished: started.Add(7*time.Second + 420*time.Millisecond),
		Settings: map[string]string{
			"source": "demo log (4 partitions, 30 h)", "sink": "sqlite:revenue.db", "runner": "prism",
			"window": "1h", "ooo-bound": "10m", "allowed-lateness": "24h", "idle-timeout": "5m",
			"dedup-retention": "25h", "early": "1m",
		},
		Counts:     &counts,
		Partitions: traces,
		Delays:     delays,
		Windows:    report.WindowsFromChangelog(changelog),
		Audit:      &sink.AuditCounts{TooLate: int64(len(res.TooLate)), Conflicts: int64(len(res.Conflicts)), Quarantined: int64(len(res.Quarantined))},
		Reconcile:  rc,
	}
}

// TestDemoReport writes the demo run in every form: a realistic size check
// for a run of ~41,000 records.
func TestDemoReport(t *testing.T) {
	r := demoRun(t)
	if err := r.Counts.Check(); err != nil {
		t.Fatalf("demo counts: %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"demo.html", "demo.md", "demo.json"} {
		path := filepath.Join(dir, name)
		if err := report.Write(path, r); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", name, fi.Size())
		if fi.Size() > 1<<20 {
			t.Errorf("%s is %d bytes: a report must stay small", name, fi.Size())
		}
	}
}

// TestScreenshot renders the demo report in headless Chromium and checks it
// produced a picture with content. With -update-demo it also refreshes
// docs/report.png.
func TestScreenshot(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s not found (apt-get install chromium): cannot render the HTML report", chromium)
	}
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := report.Write(page, demoRun(t)); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "report.png")
	screenshot(t, page, png, 1280, 2000)
	fi, err := os.Stat(png)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if fi.Size() <= 20<<10 {
		t.Errorf("screenshot is %d bytes: the page looks empty", fi.Size())
	}
	if *updateDemo {
		data, err := os.ReadFile(png)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "report.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// screenshot runs Chromium with everything that could reach the network
// turned off: the page needs nothing from it, and CI has none.
func screenshot(t *testing.T, page, png string, width, height int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--screenshot="+png, "--window-size="+itoa(width)+","+itoa(height),
		"file://"+abs)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
}

func itoa(v int) string { return strconv.Itoa(v) }
