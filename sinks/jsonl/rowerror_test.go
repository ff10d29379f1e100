package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// A line with a value no writer stores (edited by hand) is named by table,
// window, dims and column, and the read returns the other rows with it, as
// SQLite's and BigQuery's do (sink.Reader; SPEC §6: reconcile counts it as
// unexplained and goes on). Before, the first such line failed the read.
func TestJSONLUnreadableRowsNamed(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 30_000_000),
		sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 2, model.Final, 4, 40_000_000),
		sinktest.Snap(t, "2026-11-04T12:00:00Z", "{}", 2, model.Final, 5, 50_000_000),
	}
	sinktest.Write(t, j, sink.Batch{Rows: rows})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	r, ok, err := sink.OpenReader(ctx, sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
	if err != nil || !ok {
		t.Fatalf("OpenReader = %v, %v", ok, err)
	}
	defer r.Close()
	// Negative control: before the edit every row reads.
	if got, err := r.Changelog(ctx, sink.Query{Current: true}); err != nil || len(got) != 3 {
		t.Fatalf("before the edit: %d rows, %v; want 3 and no error", len(got), err)
	}
	path := filepath.Join(dir, ChangelogFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		switch {
		case strings.Contains(l, `"window_start":"2026-11-04T11:00:00Z"`):
			lines[i] = strings.Replace(l, `"FINAL"`, `"DONE"`, 1)
		case strings.Contains(l, `"window_start":"2026-11-04T12:00:00Z"`):
			lines[i] = strings.Replace(l, `"50.000000"`, `"4x.0"`, 1)
		}
	}
	if edited := strings.Join(lines, ""); edited == string(data) || strings.Count(edited, `"DONE"`) != 1 || strings.Count(edited, `"4x.0"`) != 1 {
		t.Fatalf("the edit did not take:\n%s", edited)
	} else if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, current := range []bool{true, false} {
		got, err := r.Changelog(ctx, sink.Query{Current: current})
		bad, ok := sink.Unreadable(err)
		if !ok || len(bad) != 2 {
			t.Fatalf("current %v: %v; want two unreadable rows", current, err)
		}
		for i, want := range []string{
			`hourly_revenue_changelog row window_start=2026-11-04T11:00:00Z dims={}: column result_state: revision 2: unknown result_state "DONE"`,
			`hourly_revenue_changelog row window_start=2026-11-04T12:00:00Z dims={}: column revenue: bad amount "4x.0"`,
		} {
			if bad[i].Error() != want {
				t.Errorf("current %v: unreadable row %d:\n got %s\nwant %s", current, i, bad[i].Error(), want)
			}
		}
		if len(got) != 1 || got[0].WindowStart != rows[0].WindowStart || got[0].EventCount != 3 {
			t.Errorf("current %v: rows read with the error: %+v, want the 10:00 row", current, got)
		}
	}
}
