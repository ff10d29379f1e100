package sinks

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// testCurrentRowsFrom: a sink reads back only the current rows of windows
// starting at or after the bound, FINAL or not (the restart seed's read).
func testCurrentRowsFrom(t *testing.T, u sinkUnderTest) {
	r, ok := u.s.(sink.RangeReader)
	if !ok {
		t.Fatalf("%s cannot read current rows from a window_start", u.name)
	}
	old := snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	edge := snap(t, "2026-11-04T09:00:00Z", "{}", 2, model.Final, 2, 200)
	open := snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 100)
	write(t, u.s, sink.Batch{Rows: []model.Row{old, edge, open}})

	got, err := r.CurrentRowsFrom(context.Background(), ms("2026-11-04T09:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "current rows from 09:00", got, withWriter([]model.Row{edge, open}, "stream"))
	got, err = r.CurrentRowsFrom(context.Background(), ms("2026-11-04T09:00:00.001Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "current rows from 09:00:00.001", got, withWriter([]model.Row{open}, "stream"))
	got, err = r.CurrentRowsFrom(context.Background(), ms("2026-11-05T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "current rows from a later day", got, nil)
}

// TestSQLiteCurrentRowsFromMilliseconds: window bounds with milliseconds
// render as "10:00:00.500Z", which sorts before "10:00:00Z" as TEXT; the
// read still returns exactly the windows at or after the bound, and the
// range is served by the primary key's index.
func TestSQLiteCurrentRowsFromMilliseconds(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	const win = 500
	row := func(start string) model.Row {
		ws := ms(start)
		return model.Row{WindowStart: ws, WindowEnd: ws + win, Dims: "{}", EventCount: 1, Revision: 1, State: model.Final, Writer: "stream"}
	}
	var all []model.Row
	for _, start := range []string{"2026-11-04T09:59:59Z", "2026-11-04T09:59:59.500Z", "2026-11-04T10:00:00Z",
		"2026-11-04T10:00:00.500Z", "2026-11-04T10:00:01Z"} {
		all = append(all, row(start))
	}
	write(t, s, sink.Batch{Rows: all})
	for i, r := range all {
		got, err := s.CurrentRowsFrom(context.Background(), r.WindowStart)
		if err != nil {
			t.Fatal(err)
		}
		wantRows(t, "current rows from "+model.FormatTime(r.WindowStart), got, all[i:])
	}

	var plan strings.Builder
	rs, err := s.db.Query(`EXPLAIN QUERY PLAN SELECT h.window_start FROM hourly_revenue h WHERE h.window_start >= ?`, secondPrefix(all[2].WindowStart))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var id, parent, unused int
		var detail string
		if err := rs.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "USING") || !strings.Contains(plan.String(), "window_start>") {
		t.Errorf("the window_start range is not served by an index:\n%s", plan.String())
	}
}

// TestPublishedBound: Published reads only the windows the bound needs,
// FINAL rows as closed markers without totals; the zero bound reads all.
func TestPublishedBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revenue.db")
	s := openTestSQLite(t, path)
	old := snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	final := snap(t, "2026-11-04T09:00:00Z", "{}", 2, model.Final, 2, 200)
	open := snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 100)
	write(t, s, sink.Batch{Rows: []model.Row{old, final, open}})
	spec := sink.Spec{Scheme: sink.SchemeSQLite, Path: path}
	marker := func(r model.Row) model.Row {
		return model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
	}
	open.Writer = "stream"

	got, err := sink.Published(context.Background(), spec, sink.SeedBound{Bounded: true, StartFrom: final.WindowStart})
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "published from 09:00", got, []model.Row{marker(final), open})
	got, err = sink.Published(context.Background(), spec, sink.SeedBound{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "published, unbounded", got, []model.Row{marker(old), marker(final), open})
	if (sink.SeedBound{}).Needs(0) != true || (sink.SeedBound{Bounded: true, StartFrom: 10}).Needs(9) {
		t.Error("SeedBound.Needs: the zero bound needs every window, a bound none before it")
	}
}

// testChangelogFrom: a sink reads back every revision of the windows
// starting at or after the bound, and only those, and counts every key it
// holds (the live views' refresh).
func testChangelogFrom(t *testing.T, u sinkUnderTest) {
	r, ok := u.s.(sink.RecentReader)
	if !ok {
		t.Fatalf("%s cannot read the changelog from a window_start", u.name)
	}
	ctx := context.Background()
	old := snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	edge1 := snap(t, "2026-11-04T09:00:00Z", `{"shop":"a"}`, 1, model.OnTime, 1, 100)
	edge2 := snap(t, "2026-11-04T09:00:00Z", `{"shop":"a"}`, 2, model.Late, 2, 250)
	other := snap(t, "2026-11-04T09:00:00Z", `{"shop":"b"}`, 1, model.OnTime, 1, 30)
	open := snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.Early, 1, 100)
	write(t, u.s, sink.Batch{Rows: []model.Row{old, edge1, other, open}})
	write(t, u.s, sink.Batch{Rows: []model.Row{edge2}})

	got, err := r.ChangelogFrom(ctx, ms("2026-11-04T09:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "changelog from 09:00", got, withWriter([]model.Row{edge1, edge2, other, open}, "stream"))
	got, err = r.ChangelogFrom(ctx, ms("2026-11-04T09:00:00.001Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "changelog from 09:00:00.001", got, withWriter([]model.Row{open}, "stream"))
	got, err = r.ChangelogFrom(ctx, ms("2026-11-05T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "changelog from a later day", got, nil)
	if n, err := r.KeyCount(ctx); err != nil || n != 4 {
		t.Fatalf("KeyCount = %d, %v; want 4", n, err)
	}
}
