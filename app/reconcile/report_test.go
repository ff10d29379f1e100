package reconcile_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/app/report"
)

// A revenue difference within --tolerance is recorded but not material and
// not applied; the reports say so in every format.
func TestToleranceAndReports(t *testing.T) {
	dir, path := toleranceScenario(t)
	out := t.TempDir()
	for _, ext := range []string{".md", ".json", ".html"} {
		o := options(dir, path, "tol"+strings.TrimPrefix(ext, "."))
		o.ToleranceMicros = 10_000
		o.Report = filepath.Join(out, "report"+ext)
		res := run(t, o)
		if res.ExitCode() != reconcile.ExitPending || len(res.Diffs) != 2 || len(res.Material()) != 1 {
			t.Fatalf("exit %d, diffs %v (%d material); want 3, two diffs, one material", res.ExitCode(), keysOf(res.Diffs), len(res.Material()))
		}
		data, err := os.ReadFile(o.Report)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		switch ext {
		case ".json":
			var doc report.Document
			if err := json.Unmarshal(data, &doc); err != nil || doc.Reconcile == nil {
				t.Fatalf("json report: %v\n%s", err, data)
			}
			r := doc.Reconcile
			if r.RunID != "toljson" || r.WindowsChecked != 4 || r.WindowsDiffering != 2 || r.Material != 1 ||
				r.ByClass[reconcile.ClassMissingWindow] != 1 || r.TotalDelta != "+3.010000" || r.Diffs[0].Delta != "+3.000000" ||
				r.Diffs[0].Classification != reconcile.ClassMissingWindow || r.Diffs[1].Material || r.Tolerance != "0.010000" {
				t.Errorf("json report: %s", data)
			}
			// 12:00 is missing (+3.000000, +1 event), 10:00 differs by
			// +0.010000 within the tolerance (unexplained, not material).
			wantMetrics := map[string]int64{
				"windows_compared": 4, "windows_differing": 2, "windows_differing_too_late": 0,
				"windows_differing_missing_window": 1, "windows_differing_unexplained": 1, "windows_material": 1,
				"delta_micros_abs": 3_010_000, "delta_count_abs": 1, "open_windows_compared": 0, "open_windows_differing": 0, "sink_rows_unreadable": 0,
			}
			if !maps.Equal(r.Metrics, wantMetrics) {
				t.Errorf("json report metrics:\n got %v\nwant %v", r.Metrics, wantMetrics)
			}
			var sum strings.Builder
			if err := reconcile.WriteSummary(&sum, res); err != nil {
				t.Fatal(err)
			}
			if want := "metrics  reconcile.windows_compared=4 reconcile.windows_differing=2 reconcile.windows_differing_too_late=0 " +
				"reconcile.windows_differing_missing_window=1 reconcile.windows_differing_unexplained=1 reconcile.windows_material=1 " +
				"reconcile.delta_micros_abs=3010000 reconcile.delta_count_abs=1 reconcile.open_windows_compared=0 " +
				"reconcile.open_windows_differing=0 reconcile.sink_rows_unreadable=0\n"; !strings.Contains(sum.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, sum.String())
			}
		case ".html":
			for _, bad := range []string{"<script", "<link", "http://", "https://", "src="} {
				if strings.Contains(text, bad) {
					t.Errorf("html report is not self-contained: has %q", bad)
				}
			}
			for _, want := range []string{"<!DOCTYPE html>", "Reconcile tolhtml", "missing_window", "within tolerance", "<style>",
				`<tr><td>delta_micros_abs</td><td class="n">3010000</td></tr>`} {
				if !strings.Contains(text, want) {
					t.Errorf("html report lacks %q", want)
				}
			}
		case ".md":
			for _, want := range []string{"# Reconcile tolmd", "| window_start |", "missing_window", "| 2026-11-04T10:00:00Z | `{}` | FINAL | 99.990000 | 100.000000 | +0.010000 |",
				"## Metrics", "| windows_compared | 4 |", "| windows_differing_missing_window | 1 |", "| windows_differing_unexplained | 1 |",
				"| delta_micros_abs | 3010000 |", "| delta_count_abs | 1 |"} {
				if !strings.Contains(text, want) {
					t.Errorf("markdown report lacks %q:\n%s", want, text)
				}
			}
		}
	}

	o := options(dir, path, "apply")
	o.ToleranceMicros = 10_000
	o.Apply = true
	if res := run(t, o); res.Applied != 1 {
		t.Errorf("applied %d corrections, want 1 (the material one)", res.Applied)
	}
	o.RunID = "after"
	res := run(t, o)
	if res.ExitCode() != reconcile.ExitClean || len(res.Diffs) != 1 || res.Diffs[0].Material || res.Applied != 0 {
		t.Errorf("after --apply: exit %d, diffs %v, applied %d; want 0, the immaterial one, 0", res.ExitCode(), keysOf(res.Diffs), res.Applied)
	}
}
