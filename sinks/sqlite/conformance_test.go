package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

var _ sinktest.LatestReader = (*SQLite)(nil)

func TestSQLiteConformance(t *testing.T) {
	sinktest.Conformance(t, func(t *testing.T) sinktest.Under {
		path := filepath.Join(t.TempDir(), "revenue.db")
		s := openTestSQLite(t, path)
		return sinktest.Under{S: s, Name: path, Count: func(t *testing.T, table string) int64 {
			return int64(countRows(t, s, table))
		}}
	})
}

func TestSQLiteProgress(t *testing.T) {
	sinktest.ProgressConformance(t, func(t *testing.T) sinktest.ProgressUnder {
		path := filepath.Join(t.TempDir(), "revenue.db")
		s := openTestSQLite(t, path)
		p := sinktest.OpenProgress(t, sink.Spec{Scheme: sink.SchemeSQLite, Path: path})
		return sinktest.ProgressUnder{W: s, P: p, Prunes: true, ResumeStored: func(t *testing.T) string {
			var out []string
			rs, err := s.db.QueryContext(context.Background(), `SELECT "partition", "file", "run", sealed_at FROM source_resume ORDER BY "partition"`)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			for rs.Next() {
				var p, f, r, at string
				if err := rs.Scan(&p, &f, &r, &at); err != nil {
					t.Fatal(err)
				}
				out = append(out, strings.Join([]string{p, f, r, at}, " "))
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, "\n")
		}}
	})
}

// TestSQLiteCurrentRowsFromMilliseconds: window bounds with milliseconds
// render as "10:00:00.500Z", which sorts before "10:00:00Z" as TEXT; the
// read still returns exactly the windows at or after the bound, and the
// range is served by the primary key's index.
func TestSQLiteCurrentRowsFromMilliseconds(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	const win = 500
	row := func(start string) model.Row {
		ws := sinktest.MS(start)
		return model.Row{WindowStart: ws, WindowEnd: ws + win, Dims: "{}", EventCount: 1, Revision: 1, State: model.Final, Writer: "stream"}
	}
	var all []model.Row
	for _, start := range []string{"2026-11-04T09:59:59Z", "2026-11-04T09:59:59.500Z", "2026-11-04T10:00:00Z",
		"2026-11-04T10:00:00.500Z", "2026-11-04T10:00:01Z"} {
		all = append(all, row(start))
	}
	sinktest.Write(t, s, sink.Batch{Rows: all})
	for i, r := range all {
		got, err := sink.Rows(s.Changelog(context.Background(), sink.Query{Current: true, From: &r.WindowStart}))
		if err != nil {
			t.Fatal(err)
		}
		sinktest.WantRows(t, "current rows from "+model.FormatTime(r.WindowStart), got, all[i:])
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
	old := sinktest.Snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	final := sinktest.Snap(t, "2026-11-04T09:00:00Z", "{}", 2, model.Final, 2, 200)
	open := sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 100)
	sinktest.Write(t, s, sink.Batch{Rows: []model.Row{old, final, open}})
	spec := sink.Spec{Scheme: sink.SchemeSQLite, Path: path}
	marker := func(r model.Row) model.Row {
		return model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
	}
	open.Writer = "stream"

	got, err := sink.Published(context.Background(), spec, sink.SeedBound{Bounded: true, StartFrom: final.WindowStart})
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantRows(t, "published from 09:00", got, []model.Row{marker(final), open})
	got, err = sink.Published(context.Background(), spec, sink.SeedBound{})
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantRows(t, "published, unbounded", got, []model.Row{marker(old), marker(final), open})
	if (sink.SeedBound{}).Needs(0) != true || (sink.SeedBound{Bounded: true, StartFrom: 10}).Needs(9) {
		t.Error("SeedBound.Needs: the zero bound needs every window, a bound none before it")
	}
}

func TestSQLiteLatestAudit(t *testing.T) {
	sinktest.LatestAudit(t, openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db")))
}

func TestSQLiteChangelogEntries(t *testing.T) {
	sinktest.ChangelogEntries(t, openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db")))
}
