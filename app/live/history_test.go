package live_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// setWrittenAt sets when the sink accepted revision rev of the window at
// 12:00 (the sink stamps its own clock; the test fixes it).
func (f *fixture) setWrittenAt(t *testing.T, rev int64, at string) {
	t.Helper()
	db, err := sql.Open("sqlite", f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE hourly_revenue_changelog SET written_at = ? WHERE window_start = ? AND revision = ?`, at, model.FormatTime(window), rev)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("revision %d: %d changelog rows updated", rev, n)
	}
}

func ms(v int64) *int64 { return &v }

// TestWindowRevisionHistory: each revision of a window shown says when the
// sink accepted it (the changelog's written_at, and how long after the
// window's end that was), what made the job write it, and what it added;
// a reader that returns no write times (the jsonl debug sink's) shows the
// same history without them, and says so.
func TestWindowRevisionHistory(t *testing.T) {
	ctx := context.Background()
	c := &clock{t0.Add(5 * time.Minute)}
	f := newFixtureAt(t, c.now)
	f.write(t, 1, model.Early, 100_000_000, 1)
	f.write(t, 2, model.OnTime, 150_000_000, 2)
	f.write(t, 3, model.Late, 170_000_000, 3)
	f.write(t, 4, model.Final, 170_000_000, 3)
	correction := model.Row{WindowStart: window, WindowEnd: window + 60_000, Dims: "{}", RevenueMicros: 160_000_000, EventCount: 3,
		Revision: 5, State: model.Final, Writer: "reconcile:run1"}
	if _, err := f.db.Write(ctx, sink.Batch{Rows: []model.Row{correction}}); err != nil {
		t.Fatal(err)
	}
	for rev, at := range map[int64]string{1: "2026-11-30T12:00:30.000Z", 2: "2026-11-30T12:01:17.250Z", 3: "2026-11-30T12:02:05.500Z",
		4: "2026-11-30T12:04:20.000Z", 5: "2026-12-01T08:00:00.000Z"} {
		f.setWrittenAt(t, rev, at)
	}

	s := f.mon.Snapshot(ctx)
	if len(s.Windows) != 1 || !s.WriteTimes {
		t.Fatalf("windows %+v, write times %v", s.Windows, s.WriteTimes)
	}
	end := window + 60_000
	at := func(ts string) int64 {
		v, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixMilli()
	}
	want := []report.Revision{
		{Revision: 1, State: "EARLY", Revenue: "100.000000", RevenueMicros: 100_000_000, Count: 1, Cause: report.CauseEarlyTick,
			AddedEvents: 1, AddedRevenueMicros: 100_000_000, WrittenAt: "2026-11-30T12:00:30.000Z", WrittenAtMs: at("2026-11-30T12:00:30Z"), AfterEndMs: ms(-30_000)},
		{Revision: 2, State: "ON_TIME", Revenue: "150.000000", RevenueMicros: 150_000_000, Count: 2, Cause: report.CauseWatermark,
			AddedEvents: 1, AddedRevenueMicros: 50_000_000, WrittenAt: "2026-11-30T12:01:17.250Z", WrittenAtMs: end + 17_250, AfterEndMs: ms(17_250)},
		{Revision: 3, State: "LATE", Revenue: "170.000000", RevenueMicros: 170_000_000, Count: 3, Cause: report.CauseLateData,
			AddedEvents: 1, AddedRevenueMicros: 20_000_000, WrittenAt: "2026-11-30T12:02:05.500Z", WrittenAtMs: end + 65_500, AfterEndMs: ms(65_500)},
		{Revision: 4, State: "FINAL", Revenue: "170.000000", RevenueMicros: 170_000_000, Count: 3, Cause: report.CauseClosed,
			WrittenAt: "2026-11-30T12:04:20.000Z", WrittenAtMs: end + 200_000, AfterEndMs: ms(200_000)},
		{Revision: 5, State: "FINAL", Revenue: "160.000000", RevenueMicros: 160_000_000, Count: 3, Writer: "reconcile:run1", Cause: report.CauseReconcile,
			AddedRevenueMicros: -10_000_000, WrittenAt: "2026-12-01T08:00:00.000Z", WrittenAtMs: at("2026-12-01T08:00:00Z"), AfterEndMs: ms(at("2026-12-01T08:00:00Z") - end)},
	}
	if got := s.Windows[0].Revisions; !reflect.DeepEqual(got, want) {
		t.Errorf("revisions:\n%s\nwant:\n%s", revisions(got), revisions(want))
	}

	// The jsonl debug sink's reader returns no write times.
	whole := &live.Monitor{Reader: wholeReader{f.db}, Now: c.now}
	s = whole.Snapshot(ctx)
	for i := range want {
		want[i].WrittenAt, want[i].WrittenAtMs, want[i].AfterEndMs = "", 0, nil
	}
	if got := s.Windows[0].Revisions; s.WriteTimes || !reflect.DeepEqual(got, want) {
		t.Errorf("without write times (%v):\n%s\nwant:\n%s", s.WriteTimes, revisions(got), revisions(want))
	}
}

// TestWindowRevisionsOmitted: a long history shows its first two and last
// eight revisions, each with what it added to the one before it, shown or
// not.
func TestWindowRevisionsOmitted(t *testing.T) {
	c := &clock{t0}
	f := newFixtureAt(t, c.now)
	for rev := range int64(12) {
		f.write(t, rev+1, model.Early, (rev+1)*(rev+1), rev+1) // revenue 1, 4, 9, ...
	}
	w := f.mon.Snapshot(context.Background()).Windows[0]
	var revs, added []int64
	for _, r := range w.Revisions {
		revs, added = append(revs, r.Revision), append(added, r.AddedRevenueMicros)
	}
	if w.Omitted != 2 || !reflect.DeepEqual(revs, []int64{1, 2, 5, 6, 7, 8, 9, 10, 11, 12}) ||
		!reflect.DeepEqual(added, []int64{1, 3, 9, 11, 13, 15, 17, 19, 21, 23}) {
		t.Errorf("omitted %d, revisions %v adding %v; want 2 omitted, 1 2 5…12 adding 1 3 9 11…23", w.Omitted, revs, added)
	}
}

// revisions prints revisions one a line, with their time after the end.
func revisions(rs []report.Revision) string {
	var out string
	for _, r := range rs {
		after := "-"
		if r.AfterEndMs != nil {
			after = fmt.Sprint(*r.AfterEndMs)
		}
		r.AfterEndMs = nil
		out += fmt.Sprintf("  %+v after end %s ms\n", r, after)
	}
	return out
}
