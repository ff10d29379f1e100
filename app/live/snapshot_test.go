package live_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
)

// recordingReader is a SQLite reader that records how the monitor reads
// it: whole or from a window_start.
type recordingReader struct {
	*sqlite.SQLite
	reads []int64 // -1 for a whole read, else the window_start read from
}

func (r *recordingReader) Changelog(ctx context.Context, q sink.Query) ([]sink.ChangelogEntry, error) {
	if q.From == nil {
		r.reads = append(r.reads, -1)
	} else {
		r.reads = append(r.reads, *q.From)
	}
	return r.SQLite.Changelog(ctx, q)
}

const minute = int64(time.Minute / time.Millisecond)

// row is revision rev of the one-minute window starting minute i after
// 12:00.
func row(i int, dims string, rev int64, st model.ResultState, revenue int64) model.Row {
	ws := window + int64(i)*minute
	return model.Row{WindowStart: ws, WindowEnd: ws + minute, Dims: dims, RevenueMicros: revenue, EventCount: rev,
		Revision: rev, State: st, Writer: "stream"}
}

func starts(s live.Snapshot) []string {
	var out []string
	for _, w := range s.Windows {
		out = append(out, w.Start[11:16]+" "+w.Dims+" r"+string(rune('0'+w.Revision)))
	}
	return out
}

// TestMonitorReadsTheLatestWindowsOnly: the first refresh reads the
// changelog whole; every later one reads only from the oldest key shown,
// and still shows exactly the latest keys with all their revisions, and
// counts every key.
func TestMonitorReadsTheLatestWindowsOnly(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "revenue.db"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(rows ...model.Row) {
		t.Helper()
		if _, err := db.Write(ctx, sink.Batch{Rows: rows}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 { // 12:00 .. 12:05, one key each
		write(row(i, "{}", 1, model.OnTime, 100))
	}
	rec := &recordingReader{SQLite: db}
	c := &clock{t0}
	mon := &live.Monitor{Reader: rec, Windows: 3, Now: c.now}
	t.Cleanup(func() { mon.Close() })

	s := mon.Snapshot(ctx)
	if want := []string{"12:05 {} r1", "12:04 {} r1", "12:03 {} r1"}; !slices.Equal(starts(s), want) || s.Keys != 6 {
		t.Fatalf("first snapshot: %v, %d keys; want %v, 6 keys", starts(s), s.Keys, want)
	}

	// A new revision of a key shown, a LATE one of a key no longer shown,
	// and a new key: a second dims value at 12:04, which sorts before {}
	// and pushes 12:03 out.
	write(row(4, "{}", 2, model.Late, 150), row(1, "{}", 2, model.Late, 170), row(4, `{"shop":"a"}`, 1, model.OnTime, 9))
	c.t = c.t.Add(time.Second) // past MaxAge
	s = mon.Snapshot(ctx)
	if want := []string{"12:05 {} r1", "12:04 {} r2", `12:04 {"shop":"a"} r1`}; !slices.Equal(starts(s), want) || s.Keys != 7 {
		t.Fatalf("second snapshot: %v, %d keys; want %v, 7 keys", starts(s), s.Keys, want)
	}
	if got := s.Windows[1].Revisions; len(got) != 2 || got[0].State != "ON_TIME" || got[1].State != "LATE" || got[1].Revenue != "0.000150" {
		t.Errorf("12:04 {} revisions: %+v; want ON_TIME then LATE 0.000150", got)
	}
	c.t = c.t.Add(time.Second)
	mon.Snapshot(ctx)
	want := []int64{-1, window + 3*minute, window + 4*minute}
	if !slices.Equal(rec.reads, want) {
		t.Errorf("reads %v; want whole, then from 12:03 (the oldest key shown), then from 12:04", rec.reads)
	}
}

// TestMonitorSinkEvery: with SinkEvery, the figures refresh at every
// snapshot while the rows read from the sink are reused until SinkEvery
// has passed (a BigQuery sink bills every query), or the job's state
// changes.
func TestMonitorSinkEvery(t *testing.T) {
	c := &clock{t0}
	f := newFixtureAt(t, c.now)
	f.mon.SinkEvery = time.Hour
	f.write(t, 1, model.Early, 100_000_000, 1)
	if s := f.mon.Snapshot(context.Background()); len(s.Windows) != 1 || s.Windows[0].State != "EARLY" || s.Read != 5 {
		t.Fatalf("first snapshot: windows %+v, read %d", s.Windows, s.Read)
	}
	f.write(t, 2, model.OnTime, 150_000_000, 2)
	c.t = c.t.Add(2 * time.Millisecond) // past MaxAge, not SinkEvery
	s := f.mon.Snapshot(context.Background())
	if s.Read != 6 {
		t.Errorf("figures not refreshed: read %d, want 6", s.Read)
	}
	if len(s.Windows) != 1 || s.Windows[0].State != "EARLY" {
		t.Errorf("sink read again within SinkEvery: %+v", s.Windows)
	}
	f.mon.SetState("DONE")
	if s := f.mon.Snapshot(context.Background()); len(s.Windows) != 1 || s.Windows[0].State != "ON_TIME" || s.State != "DONE" {
		t.Errorf("after SetState the sink is read again: state %s, windows %+v", s.State, s.Windows)
	}
}
