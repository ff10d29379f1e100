package reconcile_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// The comparison's metrics are Beam counters of the pipeline's comparison
// step: Outcome.Counters are read back from the pipeline result, and equal
// exact figures (one DoFn call in one bundle increments each, so prism
// cannot lose an update to concurrent bundles).
func TestComparisonCounters(t *testing.T) {
	figures := func(set map[string]int64) map[string]int64 {
		m := map[string]int64{}
		for _, n := range reconcile.MetricNames {
			m[n] = set[n]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) reconcile.Options
		want  map[string]int64
		delta metrics.DistributionSum
	}{{
		// TestToleranceAndReports' scenario: 12:00 is missing (+3.000000,
		// +1 event), 10:00 differs by +0.010000 within the tolerance.
		name: "tolerance",
		setup: func(t *testing.T) reconcile.Options {
			dir, path := toleranceScenario(t)
			o := options(dir, path, "counters-tolerance")
			o.ToleranceMicros = 10_000
			o.Report = filepath.Join(t.TempDir(), "report.json")
			return o
		},
		want: figures(map[string]int64{
			"windows_compared": 4, "windows_differing": 2, "windows_differing_missing_window": 1,
			"windows_differing_unexplained": 1, "windows_material": 1, "delta_micros_abs": 3_010_000, "delta_count_abs": 1,
		}),
		delta: metrics.DistributionSum{Count: 2, Sum: 3_010_000, Min: 10_000, Max: 3_000_000},
	}, {
		// TestOpenWindowsReportedSeparately's: 10:00 agrees, 11:00 is LATE
		// and short, 12:00 has no row and is not closed.
		name: "open",
		setup: func(t *testing.T) reconcile.Options {
			dir, path, _ := openScenario(t)
			return options(dir, path, "counters-open")
		},
		want: figures(map[string]int64{"windows_compared": 1, "open_windows_compared": 2, "open_windows_differing": 2}),
	}, {
		// A raw log without a single valid event: no totals at all, and
		// the comparison step still runs (an explicit range checks the
		// sink's rows in it).
		name: "no-totals",
		setup: func(t *testing.T) reconcile.Options {
			dir := writeLog(t, map[string][]string{"p0": {`{"event_id":"A"}`, "not json"}})
			sink, path := openSink(t)
			if _, err := sink.Write(context.Background(), batch([]model.Row{
				row(t, "2026-11-04T10:00:00Z", "2.5", 2, 2, model.Final),
			}, nil)); err != nil {
				t.Fatal(err)
			}
			o := options(dir, path, "counters-empty")
			r, err := reconcile.ParseRange("", "", "2026-11-04")
			if err != nil {
				t.Fatal(err)
			}
			o.Range = r
			return o
		},
		want: figures(map[string]int64{
			"windows_compared": 1, "windows_differing": 1, "windows_differing_unexplained": 1, "windows_material": 1,
			"delta_micros_abs": 2_500_000, "delta_count_abs": 2,
		}),
		delta: metrics.DistributionSum{Count: 1, Sum: 2_500_000, Min: 2_500_000, Max: 2_500_000},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.setup(t)
			out := run(t, o)
			if !out.CountersFromRunner {
				t.Fatal("the runner reported no comparison counters (the figures are Comparison.Metrics())")
			}
			if !maps.Equal(out.Counters, tc.want) {
				t.Errorf("Beam counters:\n got %v\nwant %v", out.Counters, tc.want)
			}
			if out.WindowDelta != tc.delta {
				t.Errorf("%s distribution = %+v, want %+v", reconcile.MetricWindowDeltaMicros, out.WindowDelta, tc.delta)
			}
			// One comparison: the counters count the Comparison the driver
			// was handed.
			if got := out.Comparison.Metrics(); !maps.Equal(got, out.Counters) {
				t.Errorf("Comparison.Metrics() = %v, counters %v", got, out.Counters)
			}
			if o.Report != "" {
				data, err := os.ReadFile(o.Report)
				if err != nil {
					t.Fatal(err)
				}
				var doc report.Document
				if err := json.Unmarshal(data, &doc); err != nil || doc.Reconcile == nil {
					t.Fatalf("json report: %v\n%s", err, data)
				}
				r := doc.Reconcile
				if r.MetricsSource != reconcile.MetricsFromCounters || !maps.Equal(r.Metrics, tc.want) {
					t.Errorf("json report: metrics_source %q, metrics %v", r.MetricsSource, r.Metrics)
				}
			}
		})
	}
}
