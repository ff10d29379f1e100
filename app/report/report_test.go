package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"golang.org/x/net/html"
)

var ms = rowtest.MS

// knownRun is SPEC §7's minimal sequence plus a second window: A=100, B=50,
// a copy of A, C=20 late, a conflicting A, D too late, a malformed line, and
// E=30 in the next hour. read 8 = counted 4 + duplicates 1 + conflicts 1 +
// quarantined 1 + too_late 1.
func knownRun() Run {
	w1, w2 := ms("2026-11-04T10:00:00Z"), ms("2026-11-04T11:00:00Z")
	h := time.Hour.Milliseconds()
	row := func(ws int64, rev int64, st model.ResultState, revenue, count int64) model.Row {
		return model.Row{WindowStart: ws, WindowEnd: ws + h, Dims: "{}", RevenueMicros: revenue * 1_000_000,
			EventCount: count, Revision: rev, State: st, Writer: "stream"}
	}
	changelog := []model.Row{
		row(w2, 3, model.Final, 30, 1),
		row(w1, 1, model.OnTime, 150, 2),
		row(w1, 2, model.Late, 170, 3),
		row(w1, 3, model.Final, 170, 3),
		row(w2, 1, model.Early, 30, 1),
		row(w2, 2, model.OnTime, 30, 1),
	}
	const applied = 4
	return Run{
		Title:    "Minimal sequence",
		Started:  time.Date(2026, 11, 6, 9, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 11, 6, 9, 0, 4, 500_000_000, time.UTC),
		Settings: map[string]string{"window": "1h", "ooo-bound": "10m", "allowed-lateness": "24h"},
		Counts: &metrics.Counts{
			Read: 8, Counted: 4, Duplicates: 1, Conflicts: 1, Quarantined: 1, TooLate: 1,
			QuarantinedBy: map[string]int64{model.ReasonMalformedJSON: 1},
			Rows:          map[string]int64{"EARLY": 1, "ON_TIME": 2, "LATE": 1, "FINAL": 2},
			// The job's bucket counters for the 7 valid events.
			Lateness: delay.NewHistogram([]int64{4, 0, 0, 1, 1, 0, 0, 1}),
			Arrival:  delay.NewHistogram([]int64{0, 0, 0, 0, 0, 0, 0, 7}),
		},
		Partitions: []PartitionTrace{{
			Partition: "p0", Read: 8, Valid: 7, Behind: 2, Watermark: ms("2026-11-05T11:20:00Z"),
			Points: []TracePoint{
				{1, ms("2026-11-04T10:15:00Z"), model.NoWatermark},
				{2, ms("2026-11-04T10:40:00Z"), ms("2026-11-04T10:05:00Z")},
				{3, ms("2026-11-04T10:15:00Z"), ms("2026-11-04T10:30:00Z")},
				{4, ms("2026-11-04T11:30:00Z"), ms("2026-11-04T10:30:00Z")},
				{5, ms("2026-11-04T10:50:00Z"), ms("2026-11-04T11:20:00Z")},
				{7, ms("2026-11-05T11:30:00Z"), ms("2026-11-04T11:20:00Z")},
				{8, ms("2026-11-04T10:10:00Z"), ms("2026-11-05T11:20:00Z")},
			},
		}},
		Delays:  tracedDelays([]int64{4, 0, 0, 1, 1, 0, 0, 1}, 0, 25*time.Hour.Milliseconds(), 25*time.Hour.Milliseconds()),
		Windows: WindowsFromChangelog(changelog),
		Audit:   &sink.AuditCounts{TooLate: 1, Conflicts: 1, Quarantined: 1},
		Reconcile: &Reconcile{
			RunID: "r-20261106", ExitCode: 0, Source: "log", Partitions: []string{"p0"}, Sink: "sqlite:revenue.db",
			Range: "every FINAL window", Apply: true, Tolerance: "0.000000",
			WindowsChecked: 2, WindowsDiffering: 1, Material: 1, Applied: 1,
			ByClass:    map[string]int{"too_late": 1, "missing_window": 0, "unexplained": 0},
			TotalDelta: "+10.000000", TotalDeltaMicros: 10_000_000, TotalDeltaCount: 1,
			Metrics: map[string]int64{"windows_compared": 2, "windows_differing": 1}, MetricsNote: "as the runner reported them",
			Diffs: []Diff{{
				WindowStart: model.FormatTime(w1), Dims: "{}", StreamedState: "FINAL", StreamedRev: 3,
				Streamed: "170.000000", Recomputed: "180.000000", Delta: "+10.000000",
				StreamedMicros: 170_000_000, RecompMicros: 180_000_000, DeltaMicros: 10_000_000,
				StreamedCount: 3, RecompCount: 4, DeltaCount: 1, TooLate: "10.000000", TooLateCount: 1,
				Classification: "too_late", Material: true, Applied: applied,
			}},
		},
	}
}

func TestWindowsFromChangelog(t *testing.T) {
	ws := knownRun().Windows
	if len(ws) != 2 {
		t.Fatalf("got %d windows, want 2", len(ws))
	}
	var got []string
	for _, w := range ws {
		for _, r := range w.Revisions {
			got = append(got, model.FormatTime(w.WindowStart)+" r"+itoa(r.Revision)+" "+r.State.String()+" "+model.FormatMicros(r.RevenueMicros))
		}
	}
	want := []string{
		"2026-11-04T10:00:00Z r1 ON_TIME 150.000000",
		"2026-11-04T10:00:00Z r2 LATE 170.000000",
		"2026-11-04T10:00:00Z r3 FINAL 170.000000",
		"2026-11-04T11:00:00Z r1 EARLY 30.000000",
		"2026-11-04T11:00:00Z r2 ON_TIME 30.000000",
		"2026-11-04T11:00:00Z r3 FINAL 30.000000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("histories:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !ws[0].HasLate() || ws[1].HasLate() {
		t.Errorf("HasLate = %v, %v; want true, false", ws[0].HasLate(), ws[1].HasLate())
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func writeRead(t *testing.T, name string, r Run) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := Write(path, r); err != nil {
		t.Fatalf("Write(%s): %v", name, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("Write left %d files behind, want only the report", len(entries))
	}
	return string(b)
}

func mustContain(t *testing.T, form, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s report lacks %q", form, w)
		}
	}
}

func TestWriteHTML(t *testing.T) {
	got := writeRead(t, "run.html", knownRun())
	mustContain(t, "html", got,
		"<title>Minimal sequence</title>",
		// Every section says what it covers.
		"<h2>Conservation</h2>\n<p class=\"scope\">Scope: this run.</p>",
		"<h2>Event-time lateness</h2>\n<p class=\"scope\">Scope: the whole raw log",
		"<h2>Revisions per window</h2>\n<p class=\"scope\">Scope: the sink&#39;s history",
		"[2026-11-04 10:00, 11:00)", "[2026-11-04 11:00, 12:00)",
		`<span class="badge ontime">ON_TIME</span> 150.000000`,
		`<span class="badge late">LATE</span> 170.000000`,
		`<span class="badge final">FINAL</span> 170.000000`,
		`<span class="badge early">EARLY</span> 30.000000`,
		// The conservation identity and its verdict.
		`read 8 = counted 4 &#43; duplicates 1 &#43; conflicts 1 &#43; quarantined 1 &#43; too_late 1: <span class="verdict ok">✓</span>`, "✓ holds",
		"<td>malformed_json</td><td class=\"n\">1</td>",
		// Charts: a trace with a watermark line and late dots, the histogram
		// with its percentiles, the reconcile diff.
		`<polyline class="wm"`, `<circle class="behind"`, "p95 25h00m", ">24h",
		// The drawn sample keeps each stretch's lowest event, so its share
		// behind is not the events' (issue #27): both are stated.
		`<td class="n">2 (28.6%)</td>`, "drawn: 7 points, 3 of them behind the watermark",
		"too_late", "170.000000", "180.000000", `<td class="n">&#43;10.000000</td>`, "rev 4", "nothing material left: 1 explained differences (1 too_late) written as corrections (exit 0)",
		`<tr><td>windows_compared</td><td class="n">2</td></tr>`,
		// The job's delay metrics: 7 events, ranks 4, 7, 7.
		"Delay metrics of the job",
		`>event lateness</td><td class="n">7</td><td class="n">&lt;1m</td><td class="n">&gt;=24h</td><td class="n">&gt;=24h</td><td class="n">4</td>`,
		`>arrival delay</td><td class="n">7</td><td class="n">&gt;=24h</td>`,
	)
	// The on-time dots are drawn over the watermark line, not under it.
	dots := regexp.MustCompile(`<circle class="dot" cx="[^"]+" cy="[^"]+" r="2"/>`).FindStringIndex(got)
	if line := strings.Index(got, `<polyline class="wm" points`); line < 0 || dots == nil || dots[0] < line {
		t.Errorf("the watermark line (at %d) is drawn after the on-time dots (%v): it hides them", line, dots)
	}
	checkHTML(t, got, true)
}

// checkHTML asserts the page is well formed (every non-void element closed
// in order), loads nothing and runs nothing.
func checkHTML(t *testing.T, page string, wantSVG bool) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)https?://`).FindString(page); m != "" {
		t.Errorf("page references %q: it must load nothing from the network", m)
	}
	for _, css := range []string{"url(", "@import", "@font-face"} {
		if strings.Contains(page, css) {
			t.Errorf("page style uses %s: it must load nothing", css)
		}
	}
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	void := map[string]bool{"meta": true, "br": true, "hr": true, "img": true, "input": true, "link": true, "wbr": true}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("tokenize: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken:
			switch tok.Data {
			case "script", "link", "img", "iframe", "object", "embed", "image", "use":
				t.Errorf("page has a <%s> element", tok.Data)
			}
			for _, a := range tok.Attr {
				if a.Key == "src" || a.Key == "href" || strings.HasPrefix(a.Key, "on") {
					t.Errorf("<%s> has attribute %s=%q", tok.Data, a.Key, a.Val)
				}
			}
			if !void[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("</%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Errorf("unclosed elements: %v", stack)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var svgs int
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "svg" {
			svgs++
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if wantSVG && svgs == 0 {
		t.Error("page has no inline SVG chart")
	}
}

func TestWriteMarkdown(t *testing.T) {
	got := writeRead(t, "run.md", knownRun())
	mustContain(t, "markdown", got,
		"# Minimal sequence",
		// Every section says what it covers.
		"## Conservation\n\n*Scope: this run.*", "## Event-time lateness\n\n*Scope: the whole raw log",
		"## Watermark vs event time, per partition\n\n*Scope: the whole raw log", "## Revisions per window\n\n*Scope: the sink's history",
		"| counted | 4 | 50.0% |", "| **read** | **8** | ✓ |",
		"read 8 = counted 4 + duplicates 1 + conflicts 1 + quarantined 1 + too_late 1: ✓",
		"| malformed_json | 1 |",
		"2026-11-04 10:00, 11:00)",
		"r1 ON_TIME 150.000000 (2) → r2 LATE 170.000000 (3) → r3 FINAL 170.000000 (3)",
		"r1 EARLY 30.000000 (1) → r2 ON_TIME 30.000000 (1) → r3 FINAL 30.000000 (1)",
		"| p0 | 8 | 7 | 2 (28.6%) | 2026-11-05T11:20:00Z |",
		"p50 0s, p95 25h00m, p99 25h00m",
		"| 2026-11-04T10:00:00Z | `{}` | FINAL | 170.000000 | 180.000000 | +10.000000 | 3 → 4 | 10.000000 (1) | too_late | true | rev 4 |",
		"Run r-20261106: **nothing material left: 1 explained differences (1 too_late) written as corrections (exit 0)**", "| windows_compared | 2 |",
		"## Delay metrics of the job",
		"| event lateness | 7 | <1m | >=24h | >=24h | 4 | 0 | 0 | 1 | 1 | 0 | 0 | 1 |",
		"| arrival delay | 7 | >=24h | >=24h | >=24h | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 7 |",
	)
}

func TestWriteJSON(t *testing.T) {
	got := writeRead(t, "RUN.JSON", knownRun()) // extensions are case-insensitive
	var doc struct {
		Counts struct {
			Read, Counted, Duplicates, Conflicts, Quarantined int64
			TooLate                                           int64            `json:"too_late"`
			By                                                map[string]int64 `json:"quarantined_by_reason"`
			Lateness                                          struct {
				Total   int64
				P50     int64 `json:"p50_below_ms"`
				P99     int64 `json:"p99_below_ms"`
				Buckets []struct{ Count int64 }
			} `json:"event_lateness"`
		}
		Conservation struct {
			Holds    bool
			Identity string
		}
		Windows struct {
			Total, Omitted int
			Shown          []struct {
				WindowStart string `json:"window_start"`
				Revisions   []struct {
					Revision      int64
					State         string `json:"result_state"`
					Revenue       string
					RevenueMicros int64 `json:"revenue_micros"`
					EventCount    int64 `json:"event_count"`
				}
			}
		}
		Partitions []struct {
			Points []struct {
				Watermark *int64 `json:"watermark_ms"`
			}
		}
		Reconcile struct {
			Diffs []struct{ Classification string }
		}
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, got)
	}
	c := doc.Counts
	if c.Read != 8 || c.Counted != 4 || c.Duplicates != 1 || c.Conflicts != 1 || c.Quarantined != 1 || c.TooLate != 1 || c.By["malformed_json"] != 1 {
		t.Errorf("counts = %+v", c)
	}
	if l := c.Lateness; l.Total != 7 || l.P50 != time.Minute.Milliseconds() || l.P99 != delay.Unbounded || len(l.Buckets) != 8 || l.Buckets[4].Count != 1 {
		t.Errorf("counts.event_lateness = %+v", l)
	}
	if !doc.Conservation.Holds || doc.Conservation.Identity != "read 8 = counted 4 + duplicates 1 + conflicts 1 + quarantined 1 + too_late 1" {
		t.Errorf("conservation = %+v", doc.Conservation)
	}
	if doc.Windows.Total != 2 || doc.Windows.Omitted != 0 || len(doc.Windows.Shown) != 2 {
		t.Fatalf("windows = %+v", doc.Windows)
	}
	w := doc.Windows.Shown[0]
	var states []string
	for _, r := range w.Revisions {
		states = append(states, r.State+"="+r.Revenue)
	}
	if w.WindowStart != "2026-11-04T10:00:00Z" || strings.Join(states, " ") != "ON_TIME=150.000000 LATE=170.000000 FINAL=170.000000" ||
		w.Revisions[2].RevenueMicros != 170_000_000 || w.Revisions[2].EventCount != 3 {
		t.Errorf("first window = %+v", w)
	}
	if p := doc.Partitions[0].Points; p[0].Watermark != nil || p[1].Watermark == nil {
		t.Errorf("no watermark must be null, a watermark a number: %+v", p[:2])
	}
	if len(doc.Reconcile.Diffs) != 1 || doc.Reconcile.Diffs[0].Classification != "too_late" {
		t.Errorf("reconcile = %+v", doc.Reconcile)
	}
}

func TestWriteViolatedConservation(t *testing.T) {
	r := knownRun()
	r.Counts.Read = 9
	for name, want := range map[string]string{
		"run.html": "✗ violated",
		"run.md":   "read 9 ≠ counted 4 + duplicates 1 + conflicts 1 + quarantined 1 + too_late 1: ✗ conservation violated",
		"run.json": `"holds": false`,
	} {
		mustContain(t, name, writeRead(t, name, r), want)
	}
}

// A reconcile or an advise report is no job and has no conservation verdict:
// its JSON leaves conservation out, where the zero value said "holds": false,
// a violation that never happened. A job without metrics still says why it
// has none.
func TestJSONConservationOnlyForJobs(t *testing.T) {
	for name, r := range map[string]Run{
		"reconcile": {Title: "Reconcile r", Reconcile: &Reconcile{RunID: "r", ByClass: map[string]int{}}},
		"advise":    {Title: "Settings advice", Advice: &Advice{Title: "Settings advice"}},
	} {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(writeRead(t, "run.json", r)), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c, ok := doc["conservation"]; ok {
			t.Errorf("%s report: conservation = %s, want none", name, c)
		}
	}
	var doc struct {
		Conservation *struct {
			Holds   bool
			Problem string
		}
	}
	job := Run{Title: "Run", Job: []Figure{{Name: "state", Value: "done"}}}
	if err := json.Unmarshal([]byte(writeRead(t, "run.json", job)), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Conservation; c == nil || c.Holds || c.Problem != noMetrics {
		t.Errorf("job without metrics: conservation = %+v, want not holding, with %q", c, noMetrics)
	}
}

func TestWriteUnknownExtension(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"run.txt", "run", "run.htm"} {
		err := Write(filepath.Join(dir, name), knownRun())
		if err == nil || !strings.Contains(err.Error(), ".html, .json, .md") {
			t.Errorf("Write(%s) = %v, want an error naming .html, .json, .md", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused Write left files: %v", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "run.html"), knownRun()); err == nil {
		t.Error("Write into a missing folder: no error")
	}
}

// TestWriteEscapes feeds markup through every field that reaches the page.
func TestWriteEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>`
	r := knownRun()
	r.Title = evil
	r.Settings["dimensions"] = evil
	r.Partitions[0].Partition = evil
	r.Counts.QuarantinedBy[evil] = 0
	for i := range r.Windows {
		r.Windows[i].Dims = `{"country":"` + evil + `"}`
	}
	r.Reconcile.RunID = evil
	r.Reconcile.Diffs[0].Dims = `{"country":"` + evil + `"}`
	page := writeRead(t, "run.html", r)
	if strings.Contains(page, "<script") {
		t.Error("html report lets <script> through")
	}
	mustContain(t, "html", page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	checkHTML(t, page, true)
	md := writeRead(t, "run.md", r)
	if strings.Contains(strings.ReplaceAll(md, "`{\"country\":\"<script>alert(1)</script>\"}`", ""), "<script") {
		t.Error("markdown report lets <script> through outside a code span")
	}
}

func TestSelectWindowsCaps(t *testing.T) {
	h := time.Hour.Milliseconds()
	var ws []WindowHistory
	for i := range int64(100) {
		st := model.OnTime
		if i == 10 || i == 60 {
			st = model.Late
		}
		ws = append(ws, WindowHistory{WindowStart: i * h, WindowEnd: (i + 1) * h, Dims: "{}",
			Revisions: []model.Row{{WindowStart: i * h, Revision: 1, State: st}}})
	}
	shown, omitted := selectWindows(ws)
	if len(shown) != LatestWindows+1 || omitted != 100-LatestWindows-1 {
		t.Fatalf("shown %d, omitted %d; want %d, %d", len(shown), omitted, LatestWindows+1, 100-LatestWindows-1)
	}
	if shown[0].WindowStart != 10*h || shown[1].WindowStart != 52*h || shown[len(shown)-1].WindowStart != 99*h {
		t.Errorf("shown starts with %d, %d and ends with %d", shown[0].WindowStart/h, shown[1].WindowStart/h, shown[len(shown)-1].WindowStart/h)
	}
	r := knownRun()
	r.Windows = ws
	mustContain(t, "html", writeRead(t, "big.html", r), "Showing 49 of 100 keys", "51 omitted")
}

func TestLabels(t *testing.T) {
	var got []string
	for i := range delay.Buckets {
		got = append(got, delay.Label(i))
	}
	if want := "<1m 1-5m 5-10m 10-30m 30m-1h 1-6h 6-24h >24h"; strings.Join(got, " ") != want {
		t.Errorf("bucket labels = %q, want %q", strings.Join(got, " "), want)
	}
	for in, want := range map[int64]string{0: "0s", 59_999: "59s", 252_000: "4m12s", 11_100_000: "3h05m", 187_200_000: "2d04h"} {
		if got := Delay(in); got != want {
			t.Errorf("Delay(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 41234567: "41,234,567", -1234: "-1,234"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%d) = %q, want %q", in, got, want)
		}
	}
	if got := fmtWindow(ms("2026-11-04T23:00:00Z"), ms("2026-11-05T00:00:00Z")); got != "[2026-11-04 23:00, 00:00)" {
		t.Errorf("fmtWindow across midnight = %q", got)
	}
	if got := fmtWindow(ms("2026-11-04T00:00:00Z"), ms("2026-11-06T00:00:00Z")); got != "[2026-11-04 00:00, 2026-11-06 00:00)" {
		t.Errorf("fmtWindow of two days = %q", got)
	}
}

func TestEmptyRun(t *testing.T) {
	// A run that read nothing (a follow stopped at once) still reports.
	for _, name := range []string{"e.html", "e.md", "e.json"} {
		got := writeRead(t, name, Run{Counts: &metrics.Counts{}})
		if !bytes.Contains([]byte(got), []byte("0")) {
			t.Errorf("%s: empty report: %q", name, got)
		}
		if name == "e.html" {
			checkHTML(t, got, false)
		}
	}
}

// TestLongHistory: a key with many LATE revisions shows its first and last
// ones and says how many it left out between them.
func TestLongHistory(t *testing.T) {
	ws := ms("2026-11-04T10:00:00Z")
	var rows []model.Row
	for rev := int64(1); rev <= 20; rev++ {
		st := model.Late
		switch rev {
		case 1:
			st = model.OnTime
		case 20:
			st = model.Final
		}
		rows = append(rows, model.Row{WindowStart: ws, WindowEnd: ws + time.Hour.Milliseconds(), Dims: "{}",
			RevenueMicros: rev * 1_000_000, EventCount: rev, Revision: rev, State: st})
	}
	r := knownRun()
	r.Windows = WindowsFromChangelog(rows)
	mustContain(t, "html", writeRead(t, "long.html", r), `<span class="r">… 12 more …</span>`, "r4</span>", "r17</span>", "20.000000")
	mustContain(t, "markdown", writeRead(t, "long.md", r),
		"r4 LATE 4.000000 (4) → … 12 more … → r17 LATE 17.000000 (17)", "r20 FINAL 20.000000 (20)")
	mustContain(t, "json", writeRead(t, "long.json", r), `"revisions_omitted": 12`)
}

// The verdict says what each of SPEC §6's exit codes means for the run,
// and the unreadable rows are listed in the page and the Markdown.
func TestReconcileVerdict(t *testing.T) {
	classes := map[string]int{"too_late": 18, "missing_window": 7, "unexplained": 0}
	for _, tc := range []struct {
		r    Reconcile
		want string
	}{
		{Reconcile{ExitCode: 0}, "nothing material found (exit 0)"},
		{Reconcile{ExitCode: 0, Material: 25, Apply: true, Applied: 25, ByClass: classes},
			"nothing material left: 25 explained differences (7 missing_window, 18 too_late) written as corrections (exit 0)"},
		{Reconcile{ExitCode: 3, Material: 25, ByClass: classes},
			"25 explained differences pending (7 missing_window, 18 too_late): run again with --apply to write them (exit 3)"},
		{Reconcile{ExitCode: 1, Material: 2, Unexplained: 1, Unreadable: []string{"x"}, Apply: true, Applied: 1},
			"1 unexplained differences and 1 unreadable sink rows: a human must look; 1 corrections written (exit 1)"},
	} {
		if got := tc.r.Verdict(); got != tc.want {
			t.Errorf("Verdict:\n got %s\nwant %s", got, tc.want)
		}
	}
	line := `hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column revenue: bad amount "4x.0"`
	run := Run{Title: "Reconcile r", Reconcile: &Reconcile{RunID: "r", ExitCode: 1, Unreadable: []string{line}, ByClass: map[string]int{}}}
	var md strings.Builder
	if err := writeMarkdown(&md, run); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := writeHTML(&page, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "1 unreadable sink rows: a human must look (exit 1)") || !strings.Contains(md.String(), "window_start=2026-11-04T11:00:00Z") {
		t.Errorf("markdown lacks the unreadable row:\n%s", md.String())
	}
	if !strings.Contains(page.String(), "<li><code>hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column revenue: bad amount &#34;4x.0&#34;</code></li>") {
		t.Errorf("html lacks the unreadable row")
	}
}
