package sinktest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// latestReader is what the live page reads of a sink: the latest audit
// records, sorted and cut where they are stored, the tables' counts, and the
// changelog with its write times.
type LatestReader interface {
	sink.Reader
	sink.RecentReader
}

// arrivals are source positions in the order they arrived, oldest first, as
// far as a position tells (app/live's CompareArrival): the pubsub message
// ids first, by text; then file positions by file name, line as a number
// (9 before 10 before 100, which text order reverses) and partition (the
// root partition "." before p0; "pubsub/..." is a file position).
var arrivals = []string{
	"pubsub:m-01",
	"pubsub:m-02",
	"p0/f-01.jsonl:2",
	"pubsub/f-01.jsonl:5",
	"f-01.jsonl:9",
	"p0/f-01.jsonl:9",
	"p1/f-01.jsonl:10",
	"p0/f-01.jsonl:100",
	"p1/f-02.jsonl:1",
	"p0/f-02.jsonl:3",
	"p1/f-02.jsonl:3",
	"p0/f-02.jsonl:11",
	"p10/f-02.jsonl:12",
}

// newestFirst is the last n of arrivals, newest first.
func newestFirst(n int) []string {
	out := slices.Clone(arrivals[len(arrivals)-n:])
	slices.Reverse(out)
	return out
}

// writeArrivals writes a too-late event, a conflict and a quarantined line
// at every position of arrivals, in an order unlike the arrival order (a
// read by insertion order would fail) and in three batches.
func writeArrivals(t *testing.T, s sink.Sink) {
	t.Helper()
	order := []int{7, 0, 12, 3, 9, 1, 11, 5, 2, 10, 4, 8, 6}
	for b, idx := range [][]int{order[:4], order[4:9], order[9:]} {
		var batch sink.Batch
		for _, i := range idx {
			pos := arrivals[i]
			batch.TooLate = append(batch.TooLate, model.TooLate{Position: pos, EventID: fmt.Sprintf("late-%02d", i),
				EventTime: MS("2026-11-04T10:10:00Z") + int64(i), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), Reason: model.ReasonWindowClosed})
			batch.Conflicts = append(batch.Conflicts, model.Conflict{Position: pos, EventID: fmt.Sprintf("dup-%02d", i),
				FirstFingerprint: uint64(i), ConflictingFingerprint: uint64(100 + i), Payload: []byte(fmt.Sprintf(`{"c":%d}`, i))})
			batch.Quarantined = append(batch.Quarantined, model.Quarantined{Position: pos, Payload: []byte(fmt.Sprintf("bad %d", i)),
				Reason: model.ReasonMalformedJSON})
		}
		if res := Write(t, s, batch); res.AuditInserted != 3*len(idx) {
			t.Fatalf("batch %d: %d audit rows inserted, want %d", b, res.AuditInserted, 3*len(idx))
		}
	}
}

func positions[T any](rows []T, pos func(T) string) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, pos(r))
	}
	return out
}

// testLatestAudit: with more rows than the limit, each Latest reader
// returns exactly the n that arrived last, newest first, whole (every
// column read back), and AuditCounts counts every row.
func LatestAudit(t *testing.T, s LatestReader) {
	ctx := context.Background()
	writeArrivals(t, s)
	// A replayed batch (the same positions again) adds nothing to a read.
	Write(t, s, sink.Batch{Audit: sink.Audit{TooLate: []model.TooLate{{Position: arrivals[12], EventID: "late-12",
		EventTime: MS("2026-11-04T10:10:00Z") + 12, Payload: []byte(`{"n":12}`), Reason: model.ReasonWindowClosed}}}})

	latest := func(n int) (sink.Audit, error) { return s.LatestAudit(ctx, n) }
	a, err := latest(5)
	tl := a.TooLate
	if err != nil {
		t.Fatal(err)
	}
	if got, want := positions(tl, func(r model.TooLate) string { return r.Position }), newestFirst(5); !slices.Equal(got, want) {
		t.Errorf("latest 5 too-late events %q\nwant %q", got, want)
	}
	if want := (model.TooLate{Position: "p10/f-02.jsonl:12", EventID: "late-12", EventTime: MS("2026-11-04T10:10:00Z") + 12,
		Payload: []byte(`{"n":12}`), Reason: model.ReasonWindowClosed}); len(tl) == 0 || fmt.Sprint(tl[0]) != fmt.Sprint(want) {
		t.Errorf("newest too-late event %+v\nwant %+v", tl, want)
	}
	// A limit past the table's size: every row, in arrival order newest first.
	a, err = latest(100)
	all := a.TooLate
	if err != nil {
		t.Fatal(err)
	}
	if got, want := positions(all, func(r model.TooLate) string { return r.Position }), newestFirst(len(arrivals)); !slices.Equal(got, want) {
		t.Errorf("all too-late events %q\nwant %q", got, want)
	}

	a, err = latest(3)
	cf := a.Conflicts
	if err != nil {
		t.Fatal(err)
	}
	if got, want := positions(cf, func(r model.Conflict) string { return r.Position }), newestFirst(3); !slices.Equal(got, want) {
		t.Errorf("latest 3 conflicts %q\nwant %q", got, want)
	}
	if len(cf) == 3 && (cf[2].EventID != "dup-10" || cf[2].FirstFingerprint != 10 || cf[2].ConflictingFingerprint != 110 || string(cf[2].Payload) != `{"c":10}`) {
		t.Errorf("third latest conflict %+v; want dup-10, fingerprints 10 and 110", cf[2])
	}
	a, err = latest(4)
	q := a.Quarantined
	if err != nil {
		t.Fatal(err)
	}
	if got, want := positions(q, func(r model.Quarantined) string { return r.Position }), newestFirst(4); !slices.Equal(got, want) {
		t.Errorf("latest 4 quarantined lines %q\nwant %q", got, want)
	}
	if len(q) == 4 && (q[3].Reason != model.ReasonMalformedJSON || string(q[3].Payload) != "bad 9") {
		t.Errorf("fourth latest quarantined line %+v; want bad 9, %s", q[3], model.ReasonMalformedJSON)
	}
	if a, err := latest(0); err != nil || a.Quarantined != nil {
		t.Errorf("LatestQuarantined(0) = %v, %v; want nothing, no query", a.Quarantined, err)
	}

	c, err := s.AuditCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(len(arrivals)); c != (sink.AuditCounts{TooLate: n, Conflicts: n, Quarantined: n}) {
		t.Errorf("audit counts %+v, want %d each", c, n)
	}
}

// testChangelogEntries: the changelog read with written_at, the time the
// sink accepted each revision, ordered by key then revision, whole or from
// a window_start.
func ChangelogEntries(t *testing.T, s LatestReader) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second) // the sink's clock, in ms
	a1 := Snap(t, "2026-11-04T09:00:00Z", "{}", 1, model.OnTime, 1, 100)
	b1 := Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.Early, 1, 100)
	Write(t, s, sink.Batch{Rows: []model.Row{b1, a1}})
	between := time.Now()
	b2 := Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.OnTime, 2, 250)
	Write(t, s, sink.Batch{Rows: []model.Row{b2}})
	after := time.Now().Add(time.Second)

	all, err := s.Changelog(ctx, sink.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []model.Row
	for _, e := range all {
		rows = append(rows, e.Row)
	}
	WantRows(t, "changelog entries", rows, WithWriter([]model.Row{a1, b1, b2}, "stream"))
	if len(all) == 3 {
		for i, lo := range []time.Time{before, before, between.Add(-time.Millisecond)} {
			hi := after
			if i < 2 {
				hi = between.Add(time.Millisecond)
			}
			if w := all[i].WrittenAt; w.Before(lo) || w.After(hi) {
				t.Errorf("revision %d of %s written at %v; want within [%v, %v]", all[i].Revision, model.FormatTime(all[i].WindowStart), w, lo, hi)
			}
		}
	}
	start := MS("2026-11-04T10:00:00Z")
	from, err := s.Changelog(ctx, sink.Query{From: &start})
	if err != nil {
		t.Fatal(err)
	}
	if len(from) != 2 || from[0].Revision != 1 || from[1].Revision != 2 || from[1].WindowStart != b2.WindowStart ||
		len(all) == 3 && (!from[0].WrittenAt.Equal(all[1].WrittenAt) || !from[1].WrittenAt.Equal(all[2].WrittenAt)) {
		t.Errorf("changelog entries from 10:00: %+v", from)
	}
}
