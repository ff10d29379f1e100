package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// A stored row that cannot be read is named by table, window, dims and
// column, and the read returns the others with it (SPEC §6: reconcile
// counts it as unexplained and goes on).
func TestSQLiteUnreadableRowsNamed(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "r.db"))
	rows := []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 30_000_000),
		sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 2, model.Final, 4, 40_000_000),
		sinktest.Snap(t, "2026-11-04T12:00:00Z", "{}", 2, model.Final, 5, 50_000_000),
	}
	sinktest.Write(t, s, sink.Batch{Rows: rows})
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE hourly_revenue SET revenue = '4x.0' WHERE window_start = '2026-11-04T11:00:00Z'`,
		`UPDATE hourly_revenue SET result_state = 'DONE' WHERE window_start = '2026-11-04T12:00:00Z'`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sinktest.CurrentRows(ctx, s)
	bad, ok := sink.Unreadable(err)
	if !ok || len(bad) != 2 {
		t.Fatalf("CurrentRows: %v; want two unreadable rows", err)
	}
	for i, want := range []string{
		`hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column revenue: bad amount "4x.0"`,
		`hourly_revenue row window_start=2026-11-04T12:00:00Z dims={}: column result_state: revision 2: unknown result_state "DONE"`,
	} {
		if bad[i].Error() != want {
			t.Errorf("unreadable row %d:\n got %s\nwant %s", i, bad[i].Error(), want)
		}
	}
	if len(got) != 1 || got[0].WindowStart != rows[0].WindowStart || got[0].EventCount != 3 {
		t.Errorf("rows read with the error: %+v, want the 10:00 row", got)
	}
	// Any other error is not "unreadable rows".
	if _, ok := sink.Unreadable(context.Canceled); ok {
		t.Error("Unreadable(context.Canceled) = true")
	}
}

// Every column a read parses is read per row: a window_end that is not a
// time, on the horizon query too, or an INTEGER column holding text or a real
// are each one unreadable row naming the column, never an error that ends
// the read (SPEC §6).
func TestSQLiteUnreadableColumnsNamed(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "r.db"))
	sinktest.Write(t, s, sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 30_000_000),
		sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 2, model.Final, 4, 40_000_000),
		sinktest.Snap(t, "2026-11-04T12:00:00Z", "{}", 2, model.Final, 5, 50_000_000),
		sinktest.Snap(t, "2026-11-04T13:00:00Z", "{}", 2, model.Final, 6, 60_000_000),
	}})
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE hourly_revenue SET window_end = 'garbage' WHERE window_start = '2026-11-04T13:00:00Z'`,
		`UPDATE hourly_revenue SET event_count = 'x' WHERE window_start = '2026-11-04T11:00:00Z'`,
		`UPDATE hourly_revenue SET revision = 2.5 WHERE window_start = '2026-11-04T12:00:00Z'`,
		`UPDATE hourly_revenue_changelog SET revenue = 'zz' WHERE window_start = '2026-11-04T10:00:00Z'`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	end, ok, err := s.FinalHorizon(ctx)
	bad, isRows := sink.Unreadable(err)
	if !isRows || len(bad) != 1 || !ok || end != rowtest.MS("2026-11-04T13:00:00Z") {
		t.Fatalf("FinalHorizon = %s, %v, %v; want 13:00 (12:00's end) and one unreadable row", model.FormatTime(end), ok, err)
	}
	wantEnd := `hourly_revenue row window_start=2026-11-04T13:00:00Z dims={}: column window_end: bad time "garbage"`
	if !strings.HasPrefix(bad[0].Error(), wantEnd) {
		t.Errorf("FinalHorizon's unreadable row:\n got %s\nwant %s...", bad[0].Error(), wantEnd)
	}

	got, err := sinktest.CurrentRows(ctx, s)
	bad, isRows = sink.Unreadable(err)
	if !isRows || len(bad) != 3 {
		t.Fatalf("CurrentRows: %v; want three unreadable rows", err)
	}
	for i, want := range []string{
		`hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column event_count: not an integer: "x"`,
		`hourly_revenue row window_start=2026-11-04T12:00:00Z dims={}: column revision: not an integer: "2.5"`,
		wantEnd,
	} {
		if !strings.HasPrefix(bad[i].Error(), want) {
			t.Errorf("unreadable row %d:\n got %s\nwant %s", i, bad[i].Error(), want)
		}
	}
	if len(got) != 1 || got[0].WindowStart != rowtest.MS("2026-11-04T10:00:00Z") {
		t.Errorf("rows read with the error: %+v, want the 10:00 row", got)
	}

	_, err = sinktest.ChangelogRows(ctx, s)
	bad, isRows = sink.Unreadable(err)
	if !isRows || len(bad) != 1 || bad[0].Error() != `hourly_revenue_changelog row window_start=2026-11-04T10:00:00Z dims={}: column revenue: bad amount "zz"` {
		t.Errorf("Changelog: %v; want the 10:00 revenue unreadable", err)
	}
}
