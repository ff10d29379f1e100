package launch

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/app/report"
)

// TestReportsShareOneRenderer: cmd/launch's --report and cmd/reconcile's
// --report of the same log and sink are drawn by the one renderer of
// package report, in every form: the same JSON document, the same settings
// and row cells in Markdown, the same page in HTML.
func TestReportsShareOneRenderer(t *testing.T) {
	o := stepping(options(t, writeLog(t, minimalLog...)))
	dir := t.TempDir()
	o.Report = filepath.Join(dir, "launch.json")
	sum, _ := run(t, o)

	ro := reconcile.Defaults()
	ro.Source, ro.Sink, ro.RunID = o.Source, o.Sink, "same-renderer"
	ro.Report = filepath.Join(dir, "reconcile.json")
	res, err := reconcile.Run(context.Background(), ro)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	// The too-late D makes 10:00 differ: the reconcile report has a row.
	if len(res.Diffs) == 0 {
		t.Fatal("reconcile found no difference: the test shows nothing")
	}
	for _, ext := range report.Extensions() {
		if ext == ".json" {
			continue // written by the runs themselves
		}
		if err := writeReport(filepath.Join(dir, "launch"+ext), sum, o.Pipeline); err != nil {
			t.Fatal(err)
		}
		if err := reconcile.WriteReport(filepath.Join(dir, "reconcile"+ext), res); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// JSON: one document type, the same top-level fields but for each
	// command's own part.
	var docs [2]report.Document
	var keys [2][]string
	for i, name := range []string{"launch.json", "reconcile.json"} {
		data := read(name)
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &top); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(data), &docs[i]); err != nil {
			t.Fatal(err)
		}
		// conservation is a job's: reconcile's report has none (it ran no job).
		if _, ok := top["conservation"]; ok != (name == "launch.json") {
			t.Errorf("%s: conservation field present %v, want only in launch's", name, ok)
		}
		for _, own := range []string{"job", "audit_tables", "reconcile", "conservation"} {
			delete(top, own)
		}
		keys[i] = slices.Sorted(maps.Keys(top))
	}
	if !slices.Equal(keys[0], keys[1]) {
		t.Errorf("JSON fields: launch %v, reconcile %v", keys[0], keys[1])
	}
	l, r := docs[0], docs[1]
	if l.Counts == nil || l.Counts.Read != 8 || l.Job["state"] != StateDone || l.Reconcile != nil ||
		r.Reconcile == nil || r.Reconcile.RunID != "same-renderer" || len(r.Reconcile.Diffs) != len(res.Diffs) || r.Counts != nil ||
		l.Settings["window"] != "1h0m0s" || r.Settings["window"] != l.Settings["window"] {
		t.Errorf("documents:\nlaunch %+v\nreconcile %+v", l, r)
	}

	// Markdown: the same settings table and the same cells for a window's
	// key and its streamed revenue (the current row in one, the diff's
	// streamed side in the other).
	lmd, rmd := read("launch.md"), read("reconcile.md")
	for _, want := range []string{"| setting | value |\n|---|---|\n", "| window | 1h0m0s |"} {
		if !strings.Contains(lmd, want) || !strings.Contains(rmd, want) {
			t.Errorf("both Markdown reports must hold %q:\n%s\n---\n%s", want, lmd, rmd)
		}
	}
	if want := "| 2026-11-04T10:00:00Z | 2026-11-04T11:00:00Z | `{}` | 170.000000 | 3 | 3 | FINAL | stream |"; !strings.Contains(lmd, want) {
		t.Errorf("launch Markdown lacks %q:\n%s", want, lmd)
	}
	if want := "| 2026-11-04T10:00:00Z | `{}` | FINAL | 170.000000 |"; !strings.Contains(rmd, want) {
		t.Errorf("reconcile Markdown lacks %q:\n%s", want, rmd)
	}
	if !strings.HasPrefix(lmd, "# Hourly revenue: ") || !strings.HasPrefix(rmd, "# Reconcile same-renderer\n") {
		t.Errorf("titles: %q, %q", strings.SplitN(lmd, "\n", 2)[0], strings.SplitN(rmd, "\n", 2)[0])
	}

	// HTML: the same self-contained page, one style sheet.
	for _, name := range []string{"launch.html", "reconcile.html"} {
		page := read(name)
		if !strings.Contains(page, "<style>"+report.Stylesheet()+"</style>") || !strings.Contains(page, "<footer>hourly revenue run report") {
			t.Errorf("%s is not package report's page", name)
		}
	}
	if page := read("reconcile.html"); !strings.Contains(page, `<section id="reconcile">`) || strings.Contains(page, `<section id="windows">`) {
		t.Error("reconcile.html: want the reconcile section and no windows section")
	}
	if page := read("launch.html"); strings.Contains(page, `<section id="reconcile">`) || !strings.Contains(page, `<section id="windows">`) {
		t.Error("launch.html: want the windows section and no reconcile section")
	}
}
