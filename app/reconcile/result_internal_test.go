package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/transforms"
)

func testComparison() Comparison {
	row := model.Row{WindowStart: 3_600_000, WindowEnd: 7_200_000, Dims: `{"c":"x"}`, RevenueMicros: 5, EventCount: 1,
		Revision: 2, State: model.Final, Writer: "stream"}
	return Comparison{
		Checked: 7,
		Diffs: []Diff{
			{Key: Key{WindowStart: 0, Dims: "{}"}, Recomputed: Totals{RevenueMicros: 3, Count: 1, TooLateRevenueMicros: 3, TooLateCount: 1},
				Classification: ClassMissingWindow, Material: true, InLog: true},
			{Key: Key{WindowStart: 3_600_000, Dims: `{"c":"x"}`}, Streamed: row, HasRow: true, Recomputed: Totals{RevenueMicros: -4, Count: 1},
				Classification: ClassUnexplained, Material: true},
		},
		OpenChecked: 3,
		Open:        []Diff{{Key: Key{WindowStart: 7_200_000, Dims: "{}"}, Streamed: row, HasRow: true, Recomputed: Totals{Count: 2}, InLog: true}},
	}
}

// The comparison travels to the driver in the result file, one JSON value
// with the stats and totals, and comes back as Compare made it.
func TestResultComparisonRoundTrip(t *testing.T) {
	c := testComparison()
	format := func(with bool) string {
		t.Helper()
		keys := []string{transforms.WindowKey(0, "{}")}
		totals := func(k *string, v *Totals) bool {
			if len(keys) == 0 {
				return false
			}
			*k, *v, keys = keys[0], Totals{RevenueMicros: 3, Count: 1}, keys[1:]
			return true
		}
		line, err := formatResult(Stats{Read: 4}, totals, func(v *Comparison) bool {
			if !with {
				return false
			}
			*v, with = c, false
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	path := filepath.Join(t.TempDir(), "result.jsonl")
	write := func(data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := format(true)
	write(line + "\n")
	res, err := ReadResult(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Comparison == nil || !reflect.DeepEqual(*res.Comparison, c) {
		t.Errorf("comparison read back:\n got %+v\nwant %+v", res.Comparison, c)
	}
	if res.Stats.Read != 4 || len(res.Totals) != 1 {
		t.Errorf("stats %+v, totals %v", res.Stats, res.Totals)
	}

	// A file cut short, or empty, is an incomplete result.
	for name, bad := range map[string]string{"cut short": line[:len(line)/2], "empty": ""} {
		write(bad)
		if _, err := ReadResult(context.Background(), path); err == nil {
			t.Errorf("%s: ReadResult accepted %q", name, bad)
		}
	}
	// Without a comparison (a recomputation only), the result has none.
	write(format(false) + "\n")
	if res, err := ReadResult(context.Background(), path); err != nil || res.Comparison != nil {
		t.Errorf("no comparison: %+v, %v", res.Comparison, err)
	}
	// The comparison's element coder.
	b, err := encodeComparison(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeComparison(b); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("comparison coder: %+v, %v", got, err)
	}
}

// A report of an Outcome whose runner reported no counters says its
// metrics are Comparison.Metrics().
func TestReportMetricsSource(t *testing.T) {
	o := Outcome{Comparison: testComparison()}
	if r := NewReport(o); r.MetricsSource != MetricsFromComparison || !reflect.DeepEqual(r.Metrics, o.Comparison.Metrics()) {
		t.Errorf("no counters: source %q, metrics %v", r.MetricsSource, r.Metrics)
	}
	o.Counters, o.CountersFromRunner = map[string]int64{MetricWindowsCompared: 7}, true
	if r := NewReport(o); r.MetricsSource != MetricsFromCounters || r.Metrics[MetricWindowsCompared] != 7 {
		t.Errorf("counters: source %q, metrics %v", r.MetricsSource, r.Metrics)
	}
}
