package pubsub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

var testPolicy = watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Hour}

func purchase(id, eventTime, amount string) string {
	return fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":"u-%s","amount":%q}`, id, eventTime, id, amount)
}

// plainReader is a reader wired to the emulator, outside any runner.
type plainReader struct {
	*reader
	out []model.Record
}

func newPlainReader(e *emulator, dir string, a archive, rest restriction) *plainReader {
	p := &plainReader{}
	r := newReader(rest, testPolicy, event.DefaultConfig())
	r.subscription, r.archiveDir = testSub, dir
	r.sub, r.archive = e.client.SubscriptionAdminClient, a
	r.pullTimeout = 700 * time.Millisecond
	r.emit = func(rec model.Record) { p.out = append(p.out, rec) }
	p.reader = r
	return p
}

// drain runs calls until one finds the subscription empty.
func (p *plainReader) drain(t *testing.T) {
	t.Helper()
	for i := 0; i < 20; i++ {
		out, err := p.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out == outCaughtUp {
			return
		}
	}
	t.Fatal("subscription never ran dry")
}

func positions(recs []model.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Position)
	}
	return out
}

// checkingArchive asserts, at the moment of every append, that the server
// has not seen an acknowledgement for any message being archived: a message
// is never acknowledged before its line is durable.
type checkingArchive struct {
	archive
	t *testing.T
	e *emulator
}

func (c checkingArchive) Append(lines [][]byte, ids []string, now time.Time) error {
	for _, id := range ids {
		if m := c.e.message(id); m == nil || m.Acks != 0 {
			c.t.Errorf("message %s acknowledged before it was archived", id)
		}
	}
	return c.archive.Append(lines, ids, now)
}

type failingArchive struct{ archive }

func (failingArchive) Append([][]byte, []string, time.Time) error {
	return errors.New("disk full")
}

func TestArchiveBeforeAck(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	a := openArchive(dir, DefaultMaxFileLines)
	defer closeArchive(a)
	ids := e.publish(
		purchase("B", "2026-11-04T10:20:00Z", "50"),
		purchase("A", "2026-11-04T10:15:00Z", "100"),
		"{\n\"event_id\":\"P\",\"event_time\":\"2026-11-04T10:25:00Z\",\"user_id\":\"u\",\"amount\":\"1\"\n}",
		"   ", // blank: acknowledged, not archived, not read
	)
	r := newPlainReader(e, dir, checkingArchive{a, t, e}, newRestriction(time.Now().UnixMilli(), false))
	r.drain(t)

	for _, id := range ids {
		if m := e.message(id); m.Acks != 1 || m.Deliveries != 1 {
			t.Errorf("message %s: %d acks, %d deliveries; want 1 and 1", id, m.Acks, m.Deliveries)
		}
	}
	assertAckedArchived(t, e, dir)
	got := positions(r.out)
	slices.Sort(got)
	want := []string{"pubsub:" + ids[0], "pubsub:" + ids[1], "pubsub:" + ids[2]}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("emitted %q, want %q", got, want)
	}
	lines, _ := archived(t, dir)
	for i, rec := range r.out {
		if string(rec.Line) != lines[i] || rec.Partition != Partition {
			t.Errorf("record %d: line %q partition %q; archive line %q", i, rec.Line, rec.Partition, lines[i])
		}
	}
	if r.blank != 1 {
		t.Errorf("blank = %d, want 1", r.blank)
	}
}

// A failing archive writer: nothing is acknowledged or emitted, the batch is
// handed back, and it is delivered again to the next attempt.
func TestFailingArchiveLeavesMessagesUnacked(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	ids := e.publish(purchase("A", "2026-11-04T10:15:00Z", "100"), purchase("B", "2026-11-04T10:20:00Z", "50"))

	r := newPlainReader(e, dir, failingArchive{}, newRestriction(time.Now().UnixMilli(), false))
	out, err := r.run(context.Background())
	if err != nil || out != outRetry {
		t.Fatalf("run = %v, %v; want retry", out, err)
	}
	if len(r.out) != 0 || r.archiveErrors != 1 {
		t.Errorf("emitted %d records with %d archive errors; want none and 1", len(r.out), r.archiveErrors)
	}
	if r.rest.MaxValid != model.NoWatermark {
		t.Errorf("the watermark moved on records that were not archived: %s", fmtMs(r.rest.MaxValid))
	}
	for _, id := range ids {
		m := e.message(id)
		if m.Acks != 0 || len(m.Modacks) == 0 || m.Modacks[len(m.Modacks)-1].AckDeadline != 0 {
			t.Errorf("message %s: acks %d, modacks %+v; want unacknowledged and handed back", id, m.Acks, m.Modacks)
		}
	}

	a := openArchive(dir, DefaultMaxFileLines)
	defer closeArchive(a)
	r2 := newPlainReader(e, dir, a, newRestriction(time.Now().UnixMilli(), false))
	r2.drain(t)
	for _, id := range ids {
		if m := e.message(id); m.Acks != 1 || m.Deliveries != 2 {
			t.Errorf("message %s: %d acks, %d deliveries; want 1 ack after redelivery", id, m.Acks, m.Deliveries)
		}
	}
	if len(r2.out) != 2 {
		t.Errorf("redelivered batch emitted %d records, want 2", len(r2.out))
	}
	assertAckedArchived(t, e, dir)
}

// A lost acknowledgement: Pub/Sub delivers the message again after its ack
// deadline; it is archived twice and emitted twice with the same position,
// so its audit rows are idempotent and dedup drops the copy.
func TestLostAckRedelivers(t *testing.T) {
	e := newEmulator(t, time.Second)
	dir := t.TempDir()
	a := openArchive(dir, DefaultMaxFileLines)
	defer closeArchive(a)
	ids := e.publish(purchase("C", "2026-11-04T10:50:00Z", "20"))
	e.lost.lose(ids[0])

	r := newPlainReader(e, dir, a, newRestriction(time.Now().UnixMilli(), false))
	r.drain(t)
	deadline := time.Now().Add(10 * time.Second)
	for e.message(ids[0]).Acks == 0 && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond) // the ack deadline (1s) expires
		r.drain(t)
	}
	m := e.message(ids[0])
	if m.Acks != 1 || m.Deliveries != 2 {
		t.Fatalf("message: %d acks, %d deliveries; want 1 ack on the 2nd delivery", m.Acks, m.Deliveries)
	}
	if got := positions(r.out); !slices.Equal(got, []string{"pubsub:" + ids[0], "pubsub:" + ids[0]}) {
		t.Errorf("positions %q: want the same position twice", got)
	}
	if lines, _ := archived(t, dir); len(lines) != 2 || lines[0] != lines[1] {
		t.Errorf("archive %q: want the payload twice", lines)
	}
}

// The replay reads every complete archive line, with the message id of its
// sidecar line as position, before pulling; a torn last line is skipped and
// a line the sidecar lacks gets its file position.
func TestReplayArchive(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	now := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	a := openArchive(dir, 2)
	if err := a.Append([][]byte{
		[]byte(purchase("A", "2026-11-04T10:15:00Z", "100")),
		[]byte(purchase("X", "2026-11-04T11:20:00Z", "1")),
		[]byte(purchase("B", "2026-11-04T10:20:00Z", "50")),
	}, []string{"m-a", "m-x", "m-b"}, now); err != nil {
		t.Fatal(err)
	}
	if err := closeArchive(a); err != nil {
		t.Fatal(err)
	}
	// A crash after the payload reached the file but before its id (and its
	// acknowledgement), then a torn line.
	f, err := os.OpenFile(filepath.Join(dir, Partition, "2026-11-04T10-000002.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%s\n{\"event_id\":\"tor", purchase("D", "2026-11-04T10:30:00Z", "7"))
	f.Close()
	pulled := e.publish(purchase("E", "2026-11-04T11:30:00Z", "3"))

	a2 := openArchive(dir, 2)
	defer closeArchive(a2)
	r := newPlainReader(e, dir, a2, newRestriction(time.Now().UnixMilli(), true))
	r.maxRecords = 2 // the replay resumes across calls from its marks
	for i := 0; i < 20 && len(r.out) < 5; i++ {
		if _, err := r.run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"pubsub:m-a", "pubsub:m-x", "pubsub:m-b", "pubsub/2026-11-04T10-000002.jsonl:2", "pubsub:" + pulled[0]}
	if got := positions(r.out); !slices.Equal(got, want) {
		t.Fatalf("positions %q\nwant %q", got, want)
	}
	// The replay stamps like the first run did: B and D come after X.
	bound := testPolicy.OutOfOrderBound.Milliseconds()
	a15 := time.Date(2026, 11, 4, 10, 15, 0, 0, time.UTC).UnixMilli()
	x := time.Date(2026, 11, 4, 11, 20, 0, 0, time.UTC).UnixMilli()
	for i, wm := range []int64{model.NoWatermark, a15 - bound, x - bound, x - bound, x - bound} {
		if r.out[i].WatermarkBefore != wm {
			t.Errorf("record %d WatermarkBefore = %s, want %s", i, fmtMs(r.out[i].WatermarkBefore), fmtMs(wm))
		}
	}
	if r.rest.Replay != replayDone {
		t.Errorf("replay phase %d, want done", r.rest.Replay)
	}
	// This run's own lines went to a new file, after the replayed ones.
	lines, _ := archived(t, dir)
	if len(lines) != 6 || lines[5] != purchase("E", "2026-11-04T11:30:00Z", "3") {
		t.Errorf("archive after the run: %q", lines)
	}
}

// Idleness: a subscription that delivers nothing for the idle timeout has its
// watermark advance with processing time (now - bound); a message afterwards
// is stamped against that watermark and makes the source active again.
func TestIdleSubscriptionAdvancesWatermark(t *testing.T) {
	t0 := time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)
	rest := newRestriction(t0.UnixMilli(), false)
	rest.MaxValid = time.Date(2026, 11, 4, 10, 30, 0, 0, time.UTC).UnixMilli()
	rest.LastActive = t0.UnixMilli()
	bound := testPolicy.OutOfOrderBound.Milliseconds()

	r := newReader(rest, testPolicy, event.DefaultConfig())
	if r.watermarkState(t0.Add(testPolicy.IdleTimeout - time.Millisecond).UnixMilli()) {
		t.Fatal("idle before the idle timeout")
	}
	if got, want := r.rest.Reported, rest.MaxValid-bound; got != want {
		t.Fatalf("active watermark %s, want %s", fmtMs(got), fmtMs(want))
	}
	idleAt := t0.Add(testPolicy.IdleTimeout)
	if !r.watermarkState(idleAt.UnixMilli()) || !r.rest.Idle {
		t.Fatal("not idle after the idle timeout")
	}
	if got, want := r.rest.Reported, idleAt.UnixMilli()-bound; got != want {
		t.Fatalf("idle watermark %s, want now - bound = %s", fmtMs(got), fmtMs(want))
	}

	// A message arrives: judged against the partition's own watermark
	// (rule (a) is about its records alone); the reported one never falls.
	r2 := newReader(r.rest, testPolicy, event.DefaultConfig())
	rec := r2.record([]byte(purchase("L", "2026-11-04T10:40:00Z", "5")), "pubsub:1", idleAt.Add(time.Minute))
	if rec.WatermarkBefore != rest.MaxValid-bound {
		t.Errorf("WatermarkBefore %s, want %s", fmtMs(rec.WatermarkBefore), fmtMs(rest.MaxValid-bound))
	}
	r2.watermarkState(idleAt.Add(time.Minute).UnixMilli())
	if r2.rest.Idle || r2.rest.Reported < r.rest.Reported {
		t.Errorf("after a message: idle %v, reported %s (was %s)", r2.rest.Idle, fmtMs(r2.rest.Reported), fmtMs(r.rest.Reported))
	}
}
