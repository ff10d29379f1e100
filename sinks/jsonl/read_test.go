package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func openSQLite(t *testing.T, path string) *sqlite.SQLite {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The jsonl sink read through OpenReader gives back exactly what the SQLite
// sink gives for the same writes: current rows with their writers, the
// changelog, the audit tables, their tally and the final horizon.
func TestJSONLReaderMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := openSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	b := sinktest.AuditBatch(t)
	b.Quarantined = append(b.Quarantined, b.Quarantined[0]) // a copy of a position
	b.Rows = []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 3, 170_500_000),
		sinktest.Snap(t, "2026-11-04T11:00:00.500Z", `{"country":"<DE>"}`, 1, model.Early, 1, -20_000_001),
	}
	batches := []sink.Batch{b, {Rows: []model.Row{
		sinktest.ReconcileRow(sinktest.Snap(t, "2026-11-04T11:00:00.500Z", `{"country":"<DE>"}`, 2, model.Final, 1, 20_000_000)),
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000), // stale
	}}}
	for _, s := range []sink.Sink{j, db} {
		for _, b := range batches {
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	r, ok, err := sink.OpenReader(ctx, sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
	if err != nil || !ok {
		t.Fatalf("OpenReader = %v, %v", ok, err)
	}
	defer r.Close()
	if _, err := r.Write(ctx, b); err == nil {
		t.Error("a jsonl reader wrote")
	}
	wantSame := func(what string, read func(sink.Reader) (any, error)) {
		t.Helper()
		got, err := read(r)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, err := read(db)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s from jsonl = %+v\nfrom sqlite = %+v", what, got, want)
		}
	}
	wantSame("current rows", func(s sink.Reader) (any, error) { return sinktest.CurrentRows(ctx, s) })
	wantSame("changelog", func(s sink.Reader) (any, error) { return sinktest.ChangelogRows(ctx, s) })
	wantSame("too_late_events", func(s sink.Reader) (any, error) { return sinktest.TooLate(ctx, s) })
	wantSame("conflict_events", func(s sink.Reader) (any, error) { return sinktest.Conflicts(ctx, s) })
	wantSame("quarantined_events", func(s sink.Reader) (any, error) { return sinktest.Quarantined(ctx, s) })
	for _, latest := range []int{0, 1, 5} {
		wantSame("tally", func(s sink.Reader) (any, error) { return s.Tally(ctx, latest) })
	}
	wantSame("final horizon", func(s sink.Reader) (any, error) {
		end, ok, err := s.FinalHorizon(ctx)
		return [2]any{end, ok}, err
	})
	if cur := sinktest.CurrentOf(t, r); len(cur) != 2 || cur[1].Writer != "reconcile:run1" || cur[1].RevenueMicros != 20_000_000 {
		t.Errorf("current rows = %+v, want two keys, the second the reconcile correction", cur)
	}

	// A last line still being appended is not read.
	f, err := os.OpenFile(filepath.Join(dir, ChangelogFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"window_start":"2026-11-04T12:00:00Z","win`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := sinktest.ChangelogOf(t, r); len(got) != 4 {
		t.Errorf("changelog with a torn last line has %d rows, want 4", len(got))
	}

	// A directory that does not exist is not readable yet.
	if _, ok, err := sink.OpenReader(ctx, sink.Spec{Scheme: sink.SchemeJSONL, Path: filepath.Join(dir, "nope")}); ok || err != nil {
		t.Errorf("OpenReader of a missing directory = %v, %v; want not ok", ok, err)
	}
}

// Rows spelled through RowJSON are the hourly_revenue columns in order,
// and read back.
func TestRowJSON(t *testing.T) {
	r := sinktest.Snap(t, "2026-11-04T10:00:00.250Z", `{"shop":"<a>"}`, 3, model.Late, 4, -1_500_000)
	got, err := Row(r).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"window_start":"2026-11-04T10:00:00.250Z","window_end":"2026-11-04T11:00:00.250Z","dims":"{\"shop\":\"<a>\"}",` +
		`"revenue":"-1.500000","revenue_micros":-1500000,"event_count":4,"revision":3,"result_state":"LATE"}`
	if string(got) != want {
		t.Errorf("RowJSON = %s\nwant %s", got, want)
	}
	r.Writer = "reconcile:r1"
	got, _ = Row(r).MarshalJSON()
	if want := want[:len(want)-1] + `,"writer":"reconcile:r1"}`; string(got) != want {
		t.Errorf("RowJSON with a writer = %s\nwant %s", got, want)
	}
	var back Row
	if err := back.UnmarshalJSON(got); err != nil || model.Row(back) != r {
		t.Errorf("read back %+v, %v; want %+v", back, err, r)
	}
}
