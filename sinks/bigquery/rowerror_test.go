package bigquery

import (
	"context"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// A stored revision no writer could have written (a result_state edited by
// hand) is named by table, window, dims and column, and the read returns the
// other rows with it, as SQLite's does (sink.Reader; SPEC §6: reconcile counts
// it as unexplained and goes on). Before, the first such row failed the read.
func TestBigQueryUnreadableRowsNamed(t *testing.T) {
	s := openTestBigQuery(t)
	rows := []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 30_000_000),
		sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 2, model.Final, 4, 40_000_000),
		sinktest.Snap(t, "2026-11-04T12:00:00Z", "{}", 2, model.Final, 5, 50_000_000),
	}
	sinktest.Write(t, s, sink.Batch{Rows: rows})
	ctx := context.Background()
	read := func() ([]sink.ChangelogEntry, error) { return s.Changelog(ctx, sink.Query{Current: true}) }
	// Negative control: before the edit every row reads.
	if got, err := read(); err != nil || len(got) != 3 {
		t.Fatalf("before the edit: %d rows, %v; want 3 and no error", len(got), err)
	}
	q := s.client.Query(`UPDATE ` + s.table(table.HourlyRevenueChangelog.Name) + ` SET result_state = 'DONE' WHERE window_start = TIMESTAMP '2026-11-04 11:00:00+00'`)
	job, err := q.Run(ctx)
	if err == nil {
		_, err = job.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"current", "changelog"} {
		got, err := s.Changelog(ctx, sink.Query{Current: name == "current"})
		bad, ok := sink.Unreadable(err)
		if !ok || len(bad) != 1 {
			t.Fatalf("%s: %v; want one unreadable row", name, err)
		}
		if want := `hourly_revenue_changelog row window_start=2026-11-04T11:00:00Z dims={}: column result_state: revision 2: unknown result_state "DONE"`; name == "changelog" && bad[0].Error() != want {
			t.Errorf("%s: unreadable row\n got %s\nwant %s", name, bad[0].Error(), want)
		}
		if len(got) != 2 || got[0].WindowStart != rows[0].WindowStart || got[1].WindowStart != rows[2].WindowStart {
			t.Errorf("%s: rows read with the error: %+v, want the 10:00 and 12:00 rows", name, got)
		}
	}
}
