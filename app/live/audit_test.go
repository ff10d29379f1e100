package live_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/triggers"
)

// countingReader counts the reads of too_late_events' latest rows and
// their limits, and fails the test when an audit table is read whole: the
// monitor reads a SQLite sink's latest rows only, sorted and cut by SQLite.
type countingReader struct {
	*sqlite.SQLite
	t          *testing.T
	auditReads int
	limits     []int
}

func (r *countingReader) LatestAudit(ctx context.Context, n int) (sink.Audit, error) {
	r.auditReads++
	r.limits = append(r.limits, n)
	return r.SQLite.LatestAudit(ctx, n)
}

func (r *countingReader) Audit(ctx context.Context) (sink.Audit, error) {
	r.t.Error("the monitor read the audit tables whole")
	return r.SQLite.Audit(ctx)
}

func TestCompareArrival(t *testing.T) {
	in := []string{"p1/f-00000002.jsonl:9", "pubsub:b", "p0/f-00000001.jsonl:100", "p0/f-00000002.jsonl:10", "pubsub:a", "p0/f-00000002.jsonl:9"}
	slices.SortFunc(in, live.CompareArrival)
	want := []string{"pubsub:a", "pubsub:b", "p0/f-00000001.jsonl:100", "p0/f-00000002.jsonl:9", "p1/f-00000002.jsonl:9", "p0/f-00000002.jsonl:10"}
	if !slices.Equal(in, want) {
		t.Errorf("arrival order %v\nwant %v", in, want)
	}
}

// TestMonitorAudit: the monitor keeps the latest records of each audit
// table, newest first (too-late ones with their window, when it closed and
// how late they were at least; conflicts with both fingerprints and the
// conflicting payload; quarantined lines with their reason, cut when long),
// counts every row, and reads the tables again only once AuditEvery has
// passed on its clock.
func TestMonitorAudit(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "revenue.db"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &countingReader{SQLite: db, t: t}
	c := &clock{t0}
	mon := &live.Monitor{Reader: rec, Now: c.now, AuditLatest: 2,
		Triggers: triggers.Policy{Window: time.Minute, AllowedLateness: 3 * time.Minute}, OutOfOrderBound: 10 * time.Second}
	t.Cleanup(func() { mon.Close() })

	et := window + 14_000 // 12:00:14, in [12:00, 12:01), closed at 12:04:00
	pos := func(p string, file, line int) string { return fmt.Sprintf("%s/f-%08d.jsonl:%d", p, file, line) }
	write := func(b sink.Batch) {
		t.Helper()
		if _, err := db.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	long := `{"event_id":"` + strings.Repeat("x", 400) + `"}`
	write(sink.Batch{Audit: sink.Audit{
		TooLate: []model.TooLate{
			{Position: pos("p0", 1, 3), EventID: "a", EventTime: et, Payload: []byte(`{"event_id":"a"}`), Reason: model.ReasonWindowClosed},
			{Position: pos("p1", 2, 1), EventID: "b", EventTime: et + 1000, Payload: []byte(`{"event_id":"b"}`), Reason: model.ReasonWindowClosed},
			{Position: pos("p0", 2, 2), EventID: "c", EventTime: et + 2000, Payload: []byte(`{"event_id":"c"}`), Reason: model.ReasonWindowClosed},
		},
		Conflicts: []model.Conflict{{Position: pos("p2", 1, 1), EventID: "d", FirstFingerprint: 0xabc, ConflictingFingerprint: 0xdef,
			Payload: []byte(`{"event_id":"d","amount":"6.00"}`)}},
		Quarantined: []model.Quarantined{{Position: pos("p3", 1, 1), Payload: []byte(long), Reason: "bad_json"}},
	}})
	s := mon.Snapshot(ctx)
	a := s.Audit
	if a == nil || a.Error != "" {
		t.Fatalf("audit: %+v", a)
	}
	if a.TooLateRows != 3 || a.ConflictRows != 1 || a.QuarantinedRows != 1 || a.ReadAtMs != t0.UnixMilli() || a.EveryMs != 10_000 {
		t.Errorf("rows: too late %d, conflicts %d, quarantined %d; read at %d every %d", a.TooLateRows, a.ConflictRows, a.QuarantinedRows, a.ReadAtMs, a.EveryMs)
	}
	var ids []string
	for _, e := range a.TooLate {
		ids = append(ids, e.EventID)
	}
	// Two kept, newest first: p0's file 2 line 2, then p1's file 2 line 1.
	if !slices.Equal(ids, []string{"c", "b"}) {
		t.Fatalf("latest too-late events %v, want c, b", ids)
	}
	e := a.TooLate[0]
	if e.EventTime != "2026-11-30T12:00:16Z" || e.Reason != model.ReasonWindowClosed || e.Payload.Text != `{"event_id":"c"}` ||
		e.WindowStartMs == nil || *e.WindowStartMs != window || *e.WindowEndMs != window+minute || *e.ClosedMs != window+4*minute ||
		*e.LateByAtLeastMs != 4*minute+10_000-16_000 {
		t.Errorf("too-late event: %+v; want window 12:00–12:01, closed 12:04:00, at least 3m54s late (closed + the 10s bound − 12:00:16)", e)
	}
	if cf := a.Conflicts; len(cf) != 1 || cf[0].EventID != "d" || cf[0].FirstFingerprint != "0000000000000abc" ||
		cf[0].ConflictingFingerprint != "0000000000000def" || cf[0].Payload.Text != `{"event_id":"d","amount":"6.00"}` {
		t.Errorf("conflicts: %+v", cf)
	}
	if q := a.Quarantined; len(q) != 1 || q[0].Reason != "bad_json" || !q[0].Cut || q[0].Bytes != len(long) || len(q[0].Text) != 300 {
		t.Errorf("quarantined: %+v", q)
	}

	// A new too-late record: read at the first snapshot 10 s on (the
	// monitor's clock), not before.
	write(sink.Batch{Audit: sink.Audit{TooLate: []model.TooLate{{Position: pos("p1", 3, 1), EventID: "e", EventTime: et,
		Payload: []byte(`{}`), Reason: model.ReasonWindowClosed}}}})
	c.t = t0.Add(9 * time.Second)
	if s := mon.Snapshot(ctx); rec.auditReads != 1 || s.Audit.TooLateRows != 3 {
		t.Errorf("at 9 s: %d reads of too_late_events, %d rows shown; want the first read's 3", rec.auditReads, s.Audit.TooLateRows)
	}
	c.t = t0.Add(10 * time.Second)
	s = mon.Snapshot(ctx)
	if rec.auditReads != 2 || s.Audit.TooLateRows != 4 || s.Audit.TooLate[0].EventID != "e" || len(s.Audit.TooLate) != 2 {
		t.Errorf("at 10 s: %d reads, %d rows, latest %+v", rec.auditReads, s.Audit.TooLateRows, s.Audit.TooLate)
	}
	if !slices.Equal(rec.limits, []int{2, 2}) {
		t.Errorf("latest rows asked for: %v; want AuditLatest, 2, at each read", rec.limits)
	}

	// A reader without the bounded reads (the jsonl debug sink's) is read
	// whole and cut by the monitor: the same records.
	whole := &live.Monitor{Reader: wholeReader{db}, Now: c.now, AuditLatest: 2,
		Triggers: triggers.Policy{Window: time.Minute, AllowedLateness: 3 * time.Minute}, OutOfOrderBound: 10 * time.Second}
	if got := whole.Snapshot(ctx).Audit; !reflect.DeepEqual(got, s.Audit) {
		t.Errorf("read whole and cut:\n%+v\nread bounded:\n%+v", got, s.Audit)
	}
}

// TestLatestAuditInArrivalOrder: the sink's bounded reads (ORDER BY …
// LIMIT in SQL) order records as CompareArrival does, on positions whose
// text order differs from it (line 9 before 10, partition last, pubsub ids
// first, the root partition).
func TestLatestAuditInArrivalOrder(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "revenue.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	positions := []string{"p1/f-00000002.jsonl:9", "pubsub:b", "p0/f-00000001.jsonl:100", "p0/f-00000002.jsonl:10", "pubsub:a",
		"p0/f-00000002.jsonl:9", "f-00000002.jsonl:9", "p10/f-00000001.jsonl:7", "pubsub/f-00000003.jsonl:1", "p2/f-00000002.jsonl:10"}
	var b sink.Batch
	for i, p := range positions {
		b.Quarantined = append(b.Quarantined, model.Quarantined{Position: p, Payload: []byte(fmt.Sprint(i)), Reason: "bad_json"})
	}
	if _, err := db.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(positions)
	slices.SortFunc(want, func(a, b string) int { return live.CompareArrival(b, a) }) // newest first
	for _, n := range []int{3, len(positions)} {
		a, err := db.LatestAudit(ctx, n)
		rows := a.Quarantined
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Position)
		}
		if !slices.Equal(got, want[:n]) {
			t.Errorf("latest %d: %q\nwant %q", n, got, want[:n])
		}
	}
}

// TestWindowCountdowns: each window shown says how far the pipeline
// watermark still has to go for its ON_TIME and its FINAL moments.
func TestWindowCountdowns(t *testing.T) {
	f := newFixture(t)
	f.mon.Triggers = triggers.Policy{Window: time.Minute, AllowedLateness: 30 * time.Second}
	f.write(t, 1, model.Early, 100_000_000, 1) // p0 at 12:00:20, p1 at 12:00:00 active: the watermark is 12:00:00
	s := f.mon.Snapshot(context.Background())
	if len(s.Windows) != 1 {
		t.Fatalf("windows %+v", s.Windows)
	}
	w := s.Windows[0]
	if w.OnTimeNeedsMs == nil || *w.OnTimeNeedsMs != 60_000 || w.FinalNeedsMs == nil || *w.FinalNeedsMs != 90_000 || *w.CloseMs != window+90_000 {
		t.Errorf("countdowns %+v; want ON_TIME +60s, FINAL +90s", w)
	}
	f.write(t, 2, model.OnTime, 150_000_000, 2) // p0 at 12:00:40, p1 idle: the watermark is 12:00:40
	f.mon.SetState("RUNNING")                   // drops the cached snapshot
	w = f.mon.Snapshot(context.Background()).Windows[0]
	if *w.OnTimeNeedsMs != 20_000 || *w.FinalNeedsMs != 50_000 {
		t.Errorf("countdowns %d, %d; want +20s, +50s", *w.OnTimeNeedsMs, *w.FinalNeedsMs)
	}
	// Without the settings: the ON_TIME countdown only.
	f.mon.Triggers.Window = 0
	f.mon.SetState("RUNNING")
	if w := f.mon.Snapshot(context.Background()).Windows[0]; w.OnTimeNeedsMs == nil || w.FinalNeedsMs != nil || w.CloseMs != nil {
		t.Errorf("without settings: %+v", w)
	}
}
