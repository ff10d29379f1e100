package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
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

// The comparison travels to the driver in the result file, one line per
// diff in any order (textio's), and comes back as Compare made it.
func TestResultComparisonRoundTrip(t *testing.T) {
	c := testComparison()
	var lines []string
	if err := formatComparison(c, func(l string) { lines = append(lines, l) }); err != nil {
		t.Fatal(err)
	}
	stats, err := formatStats(Stats{Read: 4})
	if err != nil {
		t.Fatal(err)
	}
	total, err := formatTotal(transforms.WindowKey(0, "{}"), Totals{RevenueMicros: 3, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, stats, total)
	slices.Reverse(lines)
	path := filepath.Join(t.TempDir(), "result.jsonl")
	write := func(lines []string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(lines)
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

	// A missing diff line, a second comparison line, or diff lines without
	// a comparison line make an incomplete result.
	for name, bad := range map[string][]string{
		"missing diff":      slices.Delete(slices.Clone(lines), 3, 4), // total, stats, open, diff, diff, comparison
		"two comparisons":   append(slices.Clone(lines), lines[len(lines)-1]),
		"no comparison":     lines[:len(lines)-1],
		"a comparison only": {stats, lines[len(lines)-1]},
	} {
		write(bad)
		if _, err := ReadResult(context.Background(), path); err == nil {
			t.Errorf("%s: ReadResult accepted %q", name, bad)
		}
	}
	// Without a comparison (a recomputation only), the result has none.
	write([]string{stats, total})
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
