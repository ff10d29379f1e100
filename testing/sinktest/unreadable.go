package sinktest

import (
	"context"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// UnreadableRow checks a sink.Reader's promise for a stored row it cannot read: after corrupt
// edits the 11:00 window's revision by hand (so that its column no longer reads), a read of the
// current rows and of the changelog each names that row by window, dims, column and reason
// (want), and returns the 10:00 and 12:00 rows with it (SPEC §6: reconcile counts it as
// unexplained and goes on). The same reads before the edit, with no error, are the control.
func UnreadableRow(t *testing.T, w sink.Sink, r sink.Reader, column, want string, corrupt func(windowStart string)) {
	t.Helper()
	ctx := context.Background()
	const bad = "2026-11-04T11:00:00Z"
	rows := []model.Row{
		Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 30_000_000),
		Snap(t, bad, "{}", 2, model.Final, 4, 40_000_000),
		Snap(t, "2026-11-04T12:00:00Z", "{}", 2, model.Final, 5, 50_000_000),
	}
	Write(t, w, sink.Batch{Rows: rows})
	if got, err := CurrentRows(ctx, r); err != nil || len(got) != 3 {
		t.Fatalf("before the edit: %d rows, %v; want 3 and no error", len(got), err)
	}
	corrupt(bad)
	for _, current := range []bool{true, false} {
		got, err := sink.Rows(r.Changelog(ctx, sink.Query{Current: current}))
		u, ok := sink.Unreadable(err)
		if !ok || len(u) != 1 {
			t.Fatalf("current %v: %v; want one unreadable row", current, err)
		}
		if e := u[0]; e.WindowStart != bad || e.Dims != "{}" || e.Column != column || e.Err.Error() != want {
			t.Errorf("current %v: unreadable row %s; want window_start=%s dims={} column %s: %s", current, e, bad, column, want)
		}
		if len(got) != 2 || got[0].WindowStart != rows[0].WindowStart || got[1].WindowStart != rows[2].WindowStart {
			t.Errorf("current %v: rows read with the error: %+v, want the 10:00 and 12:00 rows", current, got)
		}
	}
}
