package pubsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/googleapis/gax-go/v2"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/watermark"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var testPolicy = watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Hour}

func purchase(id, eventTime, amount string) string {
	return fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":"u-%s","amount":%q}`, id, eventTime, id, amount)
}

// plainReader runs reader calls wired to the emulator, outside any runner,
// carrying the claimed restriction from call to call as a runner would.
type plainReader struct {
	e     *emulator
	st    *store
	rest  restriction
	out   []model.Record
	tweak func(*reader)
}

func newPlainReader(t *testing.T, e *emulator, dir string) *plainReader {
	t.Helper()
	st, err := openStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &plainReader{e: e, st: st, rest: newRestriction(0, time.Now().UnixMilli())}
}

// aheadBy is a reader clock d ahead of the real one: what the reader pulls has waited d longer
// since its publish time (the emulator's clock) than it has.
func aheadBy(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// call runs one ProcessElement's worth of reading and returns its outcome.
func (p *plainReader) call(ctx context.Context) (sdfread.Outcome, *reader, error) {
	r := newReader(p.rest, Options{Watermark: testPolicy, Event: event.DefaultConfig()})
	r.subscription, r.store = testSub, p.st
	r.sub = p.e.client.SubscriptionAdminClient
	r.o.PullTimeout = 700 * time.Millisecond
	r.fault = func(string) {}
	r.claim = func(next restriction) bool { p.rest = next; return true }
	r.emit = func(rec model.Record) { p.out = append(p.out, rec) }
	if p.tweak != nil {
		p.tweak(r)
	}
	out, err := r.run(ctx)
	if err == nil {
		r.endCall(sdfread.Budget, time.Now().UnixMilli())
		p.rest = r.rest
	}
	return out, r, err
}

// drain runs calls until one finds the subscription empty.
func (p *plainReader) drain(t *testing.T) {
	t.Helper()
	for range 40 {
		out, _, err := p.call(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out == sdfread.CaughtUp {
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

// ackOrder is a pstest reactor that checks, at every acknowledgement, that
// the message is already in the archive.
type ackOrder struct {
	t   *testing.T
	dir string
	bad atomic.Int64
}

func (a *ackOrder) React(req any) (bool, any, error) {
	ack, ok := req.(*pb.AcknowledgeRequest)
	if !ok {
		return false, nil, nil
	}
	_, ids := archived(a.t, a.dir)
	for _, id := range ack.AckIds {
		msg, _, _ := strings.Cut(id, ":")
		if !slices.Contains(ids, msg) {
			a.bad.Add(1)
		}
	}
	return false, nil, nil
}

// Every acknowledgement comes after the message's archive object is
// written, and the records reach the pipeline with their message ids.
func TestArchiveBeforeAck(t *testing.T) {
	dir := t.TempDir()
	order := &ackOrder{t: t, dir: dir}
	e := newEmulator(t, 10*time.Second, pstest.ServerReactorOption{FuncName: "Acknowledge", Reactor: order})
	var ids []string
	for i := range 50 {
		ids = append(ids, e.publish(purchase(fmt.Sprint("E", i), "2026-11-04T10:15:00Z", "1"))...)
	}
	p := newPlainReader(t, e, dir)
	p.drain(t)
	if n := order.bad.Load(); n != 0 {
		t.Errorf("%d messages acknowledged before they were archived", n)
	}
	assertAckedArchived(t, e, dir)
	got := positions(p.out)
	slices.Sort(got)
	var want []string
	for _, id := range ids {
		want = append(want, "pubsub:"+id)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("emitted %v, want %v", got, want)
	}
	if p.rest.Emitted == "" {
		t.Error("the restriction holds no archive position")
	}
}

// The Flink/Dataflow case: the runner restores a restriction older than
// what was acknowledged (a checkpoint from before the last calls, or a
// retried bundle). The restored reader re-emits, from the archive, every
// record acknowledged after that position, then pulls; the records in
// between are emitted twice and counted once.
func TestRestoreBehindAck(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	p := newPlainReader(t, e, dir)

	first := e.publish(purchase("A", "2026-11-04T10:15:00Z", "100"), purchase("B", "2026-11-04T10:20:00Z", "50"))
	p.drain(t)
	checkpoint := p.rest // what the runner checkpointed
	emitted1 := len(p.out)

	// Later calls pull, archive, acknowledge and emit more; the runner
	// never commits them.
	second := e.publish(purchase("C", "2026-11-04T10:50:00Z", "20"), purchase("A", "2026-11-04T10:15:00Z", "100.0"))
	p.drain(t)
	lost := p.out[emitted1:]
	if len(lost) != 2 {
		t.Fatalf("second calls emitted %d records, want 2", len(lost))
	}
	for _, id := range append(slices.Clone(first), second...) {
		if m := e.message(id); m.Acks != 1 {
			t.Fatalf("message %s: %d acks, want 1", id, m.Acks)
		}
	}

	// Restore: another worker resumes from the old checkpoint, and new
	// messages arrive.
	q := newPlainReader(t, e, dir)
	q.rest = checkpoint
	third := e.publish(purchase("D", "2026-11-04T10:40:00Z", "5"))
	q.drain(t)
	var want []string
	for _, id := range second {
		want = append(want, "pubsub:"+id)
	}
	if got := positions(q.out[:2]); !slices.Equal(sortedCopy(got), sortedCopy(want)) {
		t.Errorf("restored reader first emitted %v, want the acknowledged-but-uncommitted %v", got, want)
	}
	if got := positions(q.out[2:]); !slices.Equal(got, []string{"pubsub:" + third[0]}) {
		t.Errorf("then %v, want the new message %s", got, third[0])
	}
	for i := range 2 {
		if q.out[i].WatermarkBefore != lost[i].WatermarkBefore && q.out[i].Position == lost[i].Position {
			t.Errorf("%s: WatermarkBefore %d on re-emit, %d the first time", q.out[i].Position, q.out[i].WatermarkBefore, lost[i].WatermarkBefore)
		}
	}

	// What the pipeline saw: the committed first part, the uncommitted
	// second part (which the runner may or may not have kept: here it
	// did, the worst case), and the restored reader's output. Counted once.
	seen := append(slices.Clone(p.out), q.out...)
	res := oracle.ReplayRecords(map[string][]model.Record{Partition: seen}, oracle.DefaultSettings(time.Now()))
	if res.Counted != 4 || res.Duplicates != 3 || res.Read != 7 {
		t.Errorf("read %d counted %d duplicates %d; want 7 = 4 counted (A B C D) + 3 duplicates (copy of A, C and A's copy re-emitted)",
			res.Read, res.Counted, res.Duplicates)
	}
	k := oracle.Key{WindowStart: w10, Dims: "{}"}
	if got := res.Final[k]; got.RevenueMicros != 175_000_000 || got.Count != 4 {
		t.Errorf("[10:00, 11:00) = %v, want 175.000000 (4 events)", got)
	}
}

// heldPull is a subscription whose pulls wait for release and then find
// nothing; pulling is closed once the first pull waits.
type heldPull struct {
	subscriber
	once    *sync.Once
	pulling chan struct{}
	release <-chan struct{}
}

func (h heldPull) Pull(context.Context, *pb.PullRequest, ...gax.CallOption) (*pb.PullResponse, error) {
	h.once.Do(func() { close(h.pulling) })
	<-h.release
	return &pb.PullResponse{}, nil
}

// A key that comes back to worker A re-emits what worker B archived and
// acknowledged after the restored position, whatever A has seen of the
// archive: only the archive knows. A's last call, begun before the key
// moved, is still waiting on a pull while B resumes from the checkpoint,
// archives, acknowledges and emits a message (a bundle the runner never
// commits); A's call then ends cleanly at the checkpoint, and the key comes
// back to A from the checkpoint. A process-wide cache of the archive's head
// told A's next call that nothing followed the checkpoint: it did not list,
// and the message, gone from Pub/Sub, never reached the pipeline.
func TestKeyBackFromAnotherWorkerReEmitsItsArchive(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	a := newPlainReader(t, e, dir)
	first := e.publish(purchase("A", "2026-11-04T10:15:00Z", "100"))
	a.drain(t)
	checkpoint, committed := a.rest, slices.Clone(a.out)
	if len(a.out) != 1 || checkpoint.Emitted == "" {
		t.Fatalf("worker A emitted %d records up to %q, want 1 and an archive position", len(a.out), checkpoint.Emitted)
	}

	// A's next call waits on its pull.
	pulling, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock()
	a.tweak = func(r *reader) {
		r.sub = heldPull{subscriber: r.sub, once: &once, pulling: pulling, release: release}
	}
	ended := make(chan error, 1)
	go func() {
		out, _, err := a.call(context.Background())
		if err == nil && out != sdfread.CaughtUp {
			err = fmt.Errorf("outcome %v, want caught up", out)
		}
		ended <- err
	}()
	<-pulling

	// Meanwhile worker B resumes the key from the checkpoint.
	b := newPlainReader(t, e, dir)
	b.rest = checkpoint
	second := e.publish(purchase("B", "2026-11-04T10:20:00Z", "50"))
	b.drain(t)
	want := []string{"pubsub:" + second[0]}
	if got := positions(b.out); !slices.Equal(got, want) {
		t.Fatalf("worker B emitted %v, want %v", got, want)
	}
	for _, id := range append(slices.Clone(first), second...) {
		if m := e.message(id); m.Deliveries != 1 || m.Acks != 1 {
			t.Fatalf("message %s: %d deliveries, %d acks; want 1 and 1", id, m.Deliveries, m.Acks)
		}
	}

	unblock()
	if err := <-ended; err != nil {
		t.Fatalf("worker A's waiting call: %v", err)
	}
	if a.rest.Emitted != checkpoint.Emitted || len(a.out) != 1 {
		t.Fatalf("worker A's waiting call moved to %q and emitted %d records; want %q and nothing new",
			a.rest.Emitted, len(a.out)-1, checkpoint.Emitted)
	}

	// B's bundle never commits: the key comes back to A from the checkpoint.
	a.rest, a.tweak, a.out = checkpoint, nil, nil
	a.drain(t)
	if got := positions(a.out); !slices.Equal(got, want) {
		t.Errorf("worker A, back at the checkpoint, emitted %v; want B's record %v re-emitted from the archive", got, want)
	}
	if a.rest.Emitted != b.rest.Emitted {
		t.Errorf("worker A ended at %q, want B's object %q", a.rest.Emitted, b.rest.Emitted)
	}

	// What the pipeline saw, B's uncommitted output kept (the worst case):
	// each message counted once.
	seen := slices.Concat(committed, b.out, a.out)
	res := oracle.ReplayRecords(map[string][]model.Record{Partition: seen}, oracle.DefaultSettings(time.Now()))
	if err := res.Conserved(); err != nil {
		t.Error(err)
	}
	if res.Read != 3 || res.Counted != 2 || res.Duplicates != 1 {
		t.Errorf("read %d counted %d duplicates %d; want 3 = 2 counted (A B) + 1 duplicate (B re-emitted)", res.Read, res.Counted, res.Duplicates)
	}
	k := oracle.Key{WindowStart: w10, Dims: "{}"}
	if got := res.Final[k]; got.RevenueMicros != 150_000_000 || got.Count != 2 {
		t.Errorf("[10:00, 11:00) = %v, want 150.000000 (2 events)", got)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// broken fails every archive write of st, or makes it slow.
func broken(st *store, fail bool, delay time.Duration) {
	put := st.put
	st.put = func(ctx context.Context, path string, data []byte) error {
		time.Sleep(delay)
		if fail {
			return errors.New("no space left on device")
		}
		return put(ctx, path, data)
	}
}

// An archive that cannot be written fails the call within the limit with a
// clear error; nothing is acknowledged, and the messages come back.
func TestUnwritableArchiveFailsWithinLimit(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	p := newPlainReader(t, e, dir)
	broken(p.st, true, 0)
	const limit = 1500 * time.Millisecond
	p.tweak = func(r *reader) { r.o.ArchiveFailAfter = limit }
	ids := e.publish(purchase("A", "2026-11-04T10:15:00Z", "1"))
	start := time.Now()
	_, r, err := p.call(context.Background())
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "cannot write for") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err = %v, want the archive failure with its cause", err)
	}
	if took > limit+2*time.Second {
		t.Errorf("failed after %s, limit %s", took, limit)
	}
	if r.c.archiveRetries.Load() == 0 {
		t.Error("no archive retries counted")
	}
	if m := e.message(ids[0]); m.Acks != 0 {
		t.Errorf("message acknowledged %d times without an archive", m.Acks)
	}
	if len(p.out) != 0 {
		t.Errorf("emitted %d records without an archive", len(p.out))
	}
}

// modacks counts ModifyAckDeadline extensions (deadline > 0).
type modacks struct {
	mu sync.Mutex
	n  int
}

func (m *modacks) React(req any) (bool, any, error) {
	if r, ok := req.(*pb.ModifyAckDeadlineRequest); ok && r.AckDeadlineSeconds > 0 {
		m.mu.Lock()
		m.n += len(r.AckIds)
		m.mu.Unlock()
	}
	return false, nil, nil
}

// Messages held longer than their ack deadline by a slow archive keep their
// lease: the reader extends it, so Pub/Sub does not deliver them again.
func TestAckDeadlineExtendedWhileHeld(t *testing.T) {
	mods := &modacks{}
	e := newEmulator(t, 1*time.Second, pstest.ServerReactorOption{FuncName: "ModifyAckDeadline", Reactor: mods})
	dir := t.TempDir()
	p := newPlainReader(t, e, dir)
	broken(p.st, false, 2500*time.Millisecond)
	p.tweak = func(r *reader) {
		r.o.AckExtendEvery, r.o.AckExtension, r.o.Pullers, r.o.MaxHeld = 300*time.Millisecond, 10*time.Second, 2, 1000
	}
	ids := e.publish(purchase("A", "2026-11-04T10:15:00Z", "1"), purchase("B", "2026-11-04T10:16:00Z", "2"))
	p.drain(t)
	mods.mu.Lock()
	n := mods.n
	mods.mu.Unlock()
	if n == 0 {
		t.Error("no ack deadline was extended while the archive write took 2.5s")
	}
	for _, id := range ids {
		if m := e.message(id); m.Deliveries != 1 || m.Acks != 1 {
			t.Errorf("message %s: %d deliveries, %d acks; want 1 and 1", id, m.Deliveries, m.Acks)
		}
	}
	if len(p.out) != 2 {
		t.Errorf("emitted %d records, want 2", len(p.out))
	}
}

// A backlog published before the job starts, which Pub/Sub hands out in no
// particular order, holds the watermark: no record of it is judged against
// a watermark past its own window, and the first fresh batch releases the
// hold. Without the hold (the control), the same backlog gives too-late
// verdicts.
func TestBacklogHoldsWatermark(t *testing.T) {
	run := func(t *testing.T, backlogAge time.Duration) (tooLate, read int, rest restriction) {
		e := newEmulator(t, 10*time.Second)
		dir := t.TempDir()
		// Three hours of events, one a minute, published before the job.
		for i := range 180 {
			at := time.UnixMilli(w10 + int64(i)*60_000).UTC().Format(time.RFC3339)
			e.publish(purchase(fmt.Sprint("E", i), at, "1"))
		}
		p := newPlainReader(t, e, dir)
		opts := func(r *reader) { r.o.BacklogAge, r.o.PullBatch, r.o.Pullers, r.o.MaxHeld = backlogAge, 10, 2, 20 }
		p.tweak = func(r *reader) {
			opts(r)
			r.now = aheadBy(1200 * time.Millisecond) // the backlog has aged past BacklogAge
		}
		p.drain(t)
		// A fresh message, pulled on the real clock, ends the backlog.
		e.publish(purchase("F", "2026-11-04T13:05:00Z", "1"))
		p.tweak = opts
		p.drain(t)
		// Rule (a) with an allowed lateness of 0: a record is too late when
		// its window's end is at or before its WatermarkBefore.
		for _, rec := range p.out {
			ev, q := event.Parse(rec, event.DefaultConfig())
			if q != nil {
				t.Fatalf("%s quarantined: %s", rec.Line, q.Reason)
			}
			if end := ev.EventTime - ev.EventTime%3_600_000 + 3_600_000; end <= rec.WatermarkBefore {
				tooLate++
			}
		}
		return tooLate, len(p.out), p.rest
	}
	t.Run("hold", func(t *testing.T) {
		tooLate, read, rest := run(t, time.Second)
		if tooLate != 0 || read != 181 {
			t.Errorf("with the hold: read %d, too late %d; want 181 and 0", read, tooLate)
		}
		if rest.Holding {
			t.Error("the fresh message did not release the hold")
		}
		if want := w10 + 179*60_000 - testPolicy.OutOfOrderBound.Milliseconds(); rest.Reported < want {
			t.Errorf("after the backlog the reported watermark is %s, want %s", watermark.FormatMs(rest.Reported), watermark.FormatMs(want))
		}
	})
	t.Run("control", func(t *testing.T) {
		tooLate, _, _ := run(t, -1)
		if tooLate == 0 {
			t.Skip("pstest delivered the backlog in order this time: nothing to compare against")
		}
		t.Logf("without the hold, %d of 181 records are judged too late", tooLate)
	})
}

// The archive is a raw-log folder: objects and their hidden sidecars, in
// partition "pubsub", on any Beam filesystem.
func TestStoreLayout(t *testing.T) {
	for _, root := range []string{t.TempDir(), "memfs://archive-" + t.Name()} {
		ctx := context.Background()
		st, err := openStore(root, 0)
		if err != nil {
			t.Fatal(err)
		}
		a, b := makeObjectName("2026-11-04T10", 2, "zz"), makeObjectName("2026-11-04T11", 10, "aa")
		for _, n := range []string{b, a} {
			if err := st.write(ctx, n, [][]byte{[]byte("x " + n)}, []rawlog.SidecarEntry{{ID: "id-" + n, Publish: 5, Backlog: n == a}}); err != nil {
				t.Fatal(err)
			}
		}
		names, more, err := st.list(ctx, "")
		if err != nil || more || !slices.Equal(names, []string{a, b}) {
			t.Fatalf("%s: list = %v, %v, %v; want %v", root, names, more, err, []string{a, b})
		}
		if names, _, _ := st.list(ctx, a); !slices.Equal(names, []string{b}) {
			t.Errorf("%s: list after %s = %v", root, a, names)
		}
		// Pages of one name: a full page may have more after it; a page of
		// a stray only is listed past.
		if err := st.put(ctx, files.Join(st.dir, "notes.txt"), nil); err != nil {
			t.Fatal(err)
		}
		st.page = 1
		if names, more, err := st.list(ctx, ""); !slices.Equal(names, []string{a}) || !more || err != nil {
			t.Errorf("%s: list a page of 1 = %v, %v, %v; want [%s], more", root, names, more, err, a)
		}
		if names, more, err := st.list(ctx, b); len(names) != 0 || more || err != nil {
			t.Errorf("%s: list a page of 1 after %s = %v, %v, %v; want none, no more", root, b, names, more, err)
		}
		rc, side, err := st.read(ctx, a, 0)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		if string(data) != "x "+a+"\n" || len(side) != 1 || side[0] != (rawlog.SidecarEntry{ID: "id-" + a, Publish: 5, Backlog: true}) {
			t.Errorf("%s: read %q %+v", root, data, side)
		}
		if _, ok := filepath.Abs(root); ok == nil && files.IsLocal(root) {
			if _, err := os.Stat(filepath.Join(root, Partition, "."+a+".ids")); err != nil {
				t.Errorf("no hidden sidecar beside %s: %v", a, err)
			}
		}
	}
}

// Several reader keys share one subscription: each archives to its own
// partition and together they emit every message once.
// (keys_test.go: each key is an element of its own.)
func TestShardsShareTheSubscription(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	var want []string
	for i := range 300 {
		want = append(want, "pubsub:"+e.publish(purchase(fmt.Sprint("E", i), "2026-11-04T10:15:00Z", "1"))[0])
	}
	readers := []*plainReader{newPlainReader(t, e, dir), newPlainReader(t, e, dir)}
	st1, err := openStore(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	readers[1].st, readers[1].rest.Shard = st1, 1
	for _, p := range readers {
		p.tweak = func(r *reader) { r.o.PullBatch, r.o.MaxHeld = 20, 80 }
	}
	var wg sync.WaitGroup
	for _, p := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				if out, _, err := p.call(context.Background()); err != nil || out == sdfread.CaughtUp {
					return
				}
			}
		}()
	}
	wg.Wait()
	var got []string
	for i, p := range readers {
		if len(p.out) == 0 {
			t.Errorf("reader key %d read nothing", i)
		}
		for _, rec := range p.out {
			if rec.Partition != PartitionOf(i) {
				t.Errorf("reader key %d emitted a record of partition %s", i, rec.Partition)
			}
		}
		got = append(got, positions(p.out)...)
	}
	if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
		t.Errorf("the keys emitted %d records (%d distinct wanted)", len(got), len(want))
	}
	for i := range readers {
		if entries, err := os.ReadDir(filepath.Join(dir, PartitionOf(i))); err != nil || len(entries) == 0 {
			t.Errorf("partition %s: %v", PartitionOf(i), err)
		}
	}
	// reconcile joins the stream's positions to the archive's lines in
	// every key's partition, through the sidecars.
	resolved, err := rawlog.ResolveIDPositions(dir, want)
	if err != nil || len(resolved) != len(want) {
		t.Errorf("resolved %d of %d positions: %v", len(resolved), len(want), err)
	}
}

// failingPull is a subscription whose pulls fail with a transient error.
type failingPull struct{ subscriber }

func (failingPull) Pull(context.Context, *pb.PullRequest, ...gax.CallOption) (*pb.PullResponse, error) {
	return nil, status.Error(codes.Unavailable, "pubsub is down")
}

// A subscription that answers nothing goes idle after the idle timeout (its
// watermark then advances with processing time); one that cannot be pulled
// from does not: an outage of Pub/Sub says nothing about the producers.
func TestPullFailureIsNotIdleness(t *testing.T) {
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Second}
	start := time.Now()
	for _, tc := range []struct {
		name     string
		out      sdfread.Outcome
		wantIdle bool
	}{{"empty", sdfread.CaughtUp, true}, {"failing", sdfread.Retry, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReader(newRestriction(0, start.UnixMilli()), Options{Watermark: policy, Event: event.DefaultConfig()})
			r.sub = failingPull{}
			if tc.out == sdfread.Retry {
				r.store = &store{dir: t.TempDir()}
				r.rest.Started = true
				out, err := r.pull(context.Background(), start)
				if err != nil || out != sdfread.Retry {
					t.Fatalf("pull = %v, %v; want retry", out, err)
				}
			}
			r.endCall(tc.out, start.Add(2*time.Second).UnixMilli())
			if r.rest.Idle != tc.wantIdle {
				t.Errorf("idle = %v after 2s with a 1s idle timeout, want %v", r.rest.Idle, tc.wantIdle)
			}
		})
	}
}

// Through the real client, a Pub/Sub that answers every pull with an error
// is not an empty subscription either: the client's own retries of
// Unavailable end in the pull's timeout, and a DeadlineExceeded the server
// sends before that timeout is a failure, not an empty pull.
func TestPullOutageThroughTheClientIsNotIdleness(t *testing.T) {
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Second}
	for _, code := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			e := newEmulator(t, 10*time.Second, pstest.WithErrorInjection("Pull", code, "pubsub is down"))
			start := time.Now()
			r := newReader(newRestriction(0, start.UnixMilli()), Options{Watermark: policy, Event: event.DefaultConfig(), PullTimeout: 300 * time.Millisecond})
			r.subscription, r.sub, r.store = testSub, e.client.SubscriptionAdminClient, &store{dir: t.TempDir()}
			r.rest.Started = true
			out, err := r.pull(context.Background(), start)
			if err != nil || out != sdfread.Retry {
				t.Fatalf("pull = %v, %v; want retry", out, err)
			}
			if r.endCall(out, start.Add(2*time.Second).UnixMilli()); r.rest.Idle {
				t.Error("idle after 2s of pulls failing with a 1s idle timeout, want active")
			}
		})
	}
}

// downstreamFailure is the panic a fused downstream step raises through
// emit when it fails: the SDK unwinds the whole bundle through the reader.
type downstreamFailure struct{}

// A bundle retried after a downstream step failed inside emit re-emits
// every message of the failed call, although that call archived and
// acknowledged them, in the same process.
func TestRetryAfterDownstreamFailure(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	p := newPlainReader(t, e, dir)
	p.drain(t) // a clean call first
	committed := p.rest

	var ids []string
	for i := range 5 {
		ids = append(ids, e.publish(purchase(fmt.Sprint("R", i), "2026-11-04T10:15:00Z", "1"))...)
	}
	p.tweak = func(r *reader) {
		r.emit = func(model.Record) { panic(downstreamFailure{}) }
	}
	func() {
		defer func() {
			if v := recover(); v != (downstreamFailure{}) {
				t.Fatalf("the failing call ended with %v, want the downstream failure", v)
			}
		}()
		p.call(context.Background())
		t.Fatal("the failing call returned")
	}()
	assertAckedArchived(t, e, dir) // the failed call got as far as acknowledging

	// The runner retries the bundle from its committed restriction.
	p.rest, p.tweak = committed, nil
	p.drain(t)
	var want []string
	for _, id := range ids {
		want = append(want, "pubsub:"+id)
	}
	if got := positions(p.out); !slices.Equal(sortedCopy(got), sortedCopy(want)) {
		t.Errorf("the retry emitted %d of %d messages: %v, want %v", len(got), len(want), got, want)
	}
}
