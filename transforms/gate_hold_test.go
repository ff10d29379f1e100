package transforms

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
)

// memShard is a dedup shard's state in memory: the meta value and the ids
// and pending bags.
type memShard struct {
	memState
	bags map[string][]any
}

func (m *memShard) ReadBagState(id string) ([]any, []state.Transaction, error) {
	return m.bags[id], nil, nil
}

func (m *memShard) WriteBagState(t state.Transaction) error {
	m.bags[t.Key] = append(m.bags[t.Key], t.Val)
	return nil
}

func (m *memShard) ClearBagState(t state.Transaction) error {
	delete(m.bags, t.Key)
	return nil
}

// gateRun drives one watermark gate key as a runner would, a bundle per
// call.
type gateRun struct {
	t      *testing.T
	f      *gateFn
	sp     *memShard
	tp     *recordTimers
	passed []model.Event
	late   []model.TooLate
}

func startGate(t *testing.T) *gateRun {
	f := &gateFn{
		keyedStep: keyedStep{DedupOptions: DedupOptions{Shards: 2048, Policy: rollbackPolicy, Bound: (10 * time.Minute).Milliseconds(),
			Retention: (25 * time.Hour).Milliseconds(), NoCache: true}, CacheID: "test"},
		Pending: state.MakeBagState[[]byte]("pending"), Meta: state.MakeValueState[[]byte]("meta"),
		Boundary: timers.InEventTime("boundary"),
	}
	f.Setup()
	return &gateRun{t: t, f: f, sp: &memShard{memState{values: map[string]any{}}, map[string][]any{}}, tp: &recordTimers{}}
}

// emit takes a batch the gate passed: one dedup shard's and partition's.
func (r *gateRun) emit(shard int, b model.EventBatch) {
	for _, e := range b.Events {
		if want := ShardOf(e.EventID, r.f.Shards); shard != want || e.Partition != b.Events[0].Partition {
			r.t.Errorf("%s passed to shard %d in a batch of %s, want shard %d", e.EventID, shard, b.Events[0].Partition, want)
		}
	}
	r.passed = append(r.passed, b.Events...)
}
func (r *gateRun) tooLate(l model.TooLate) { r.late = append(r.late, l) }

func (r *gateRun) process(b model.EventBatch) {
	r.t.Helper()
	r.f.StartBundle(nil, nil)
	if err := r.f.ProcessElement(context.Background(), r.sp, r.tp, 0, b, r.emit, r.tooLate); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gateRun) fire(tag byte, at int64) {
	r.t.Helper()
	r.f.StartBundle(nil, nil)
	tc := timers.Context{Family: "boundary", Tag: string(rune(tag)) + strconv.FormatInt(at, 10)}
	if err := r.f.OnTimer(context.Background(), r.sp, r.tp, 0, tc, r.emit, r.tooLate); err != nil {
		r.t.Fatal(err)
	}
}

// TestBatchAheadOfItsAnnouncementWaitsForTheEnd: C of SPEC §7 (10:50,
// stamped 11:10, its partition's watermark after X) reaches its gate key
// before window 10:00's announcement (AnnounceWindows is a stage of its own
// and may lag the batches). The key knows no watermark, so judged at once
// C passes on time, and the window's ON_TIME row says 170 (CI on f46b313).
// Arming C's own window first makes the batch wait for the window's end:
// held, with a release timer just after 11:00, and passed as late data once
// the boundary timer fired. (Before 01dc6ce the dedup shard armed C's window
// only when it counted C: C came out at once, AfterEnd false.) Later, at the
// window's close, a copy of C is too late.
func TestBatchAheadOfItsAnnouncementWaitsForTheEnd(t *testing.T) {
	end := at("2026-11-04T11:00:00Z")
	c := model.Event{EventID: "C", EventTime: at("2026-11-04T10:50:00Z"), AmountMicros: 20e6, Dims: "{}", Fingerprint: 7,
		Partition: "p", Position: "p/log:5", WatermarkBefore: at("2026-11-04T11:10:00Z")}
	r := startGate(t)
	r.process(model.EventBatch{Events: []model.Event{c}})
	if len(r.passed) != 0 {
		t.Fatalf("C judged before the window's end: %+v", r.passed)
	}
	release := string(rune(tagRelease)) + strconv.FormatInt(end+1, 10)
	if tm, ok := r.tp.set[release]; !ok || tm.FireTimestamp.Milliseconds() != end+1 {
		t.Fatalf("release timer %q = %+v (set %v), want one at the window end + 1 ms", release, tm, ok)
	}
	if _, ok := r.tp.set[string(rune(tagBoundary))+strconv.FormatInt(end, 10)]; !ok {
		t.Fatal("no boundary timer at the window end")
	}
	r.fire(tagBoundary, end)
	r.fire(tagRelease, end+1)
	if len(r.passed) != 1 || r.passed[0].EventID != "C" || !r.passed[0].AfterEnd || r.passed[0].PipelineWatermark != end {
		t.Fatalf("released %+v, want C passed as late data stamped with the window end", r.passed)
	}
	closes := end + rollbackPolicy.AllowedLateness.Milliseconds()
	if _, ok := r.tp.set[string(rune(tagBoundary))+strconv.FormatInt(closes, 10)]; !ok {
		t.Fatal("no boundary timer at the window's close")
	}
	r.fire(tagBoundary, closes)
	copyC := c
	copyC.WatermarkBefore = closes + 1
	r.process(model.EventBatch{Events: []model.Event{copyC}})
	if len(r.passed) != 1 || len(r.late) != 1 || r.late[0].EventID != "C" {
		t.Fatalf("after the close: passed %d, too late %+v; want the copy too late", len(r.passed), r.late)
	}
}

// On GateKeys dedup shards (prism's), a batch Admit built passes the gate as
// it came, still coded, with the key's watermark; one holding an event of a
// closed window is decoded and judged event by event.
func TestGatePassesAdmittedBatchesCoded(t *testing.T) {
	r := startGate(t)
	r.f.Shards = GateKeys
	var ids []string // ids of gate key 0, the key the harness runs
	for i := 0; len(ids) < 2; i++ {
		if id := "evt_" + strconv.Itoa(i); ShardOf(id, GateKeys) == 0 {
			ids = append(ids, id)
		}
	}
	admitted := func(times ...string) model.EventBatch {
		var events []model.Event
		for i, when := range times {
			events = append(events, model.Event{EventID: ids[i], EventTime: at(when), Partition: "p0",
				Position: "p0/000001.jsonl:" + strconv.Itoa(i+1), WatermarkBefore: model.NoWatermark})
		}
		spans, since := spansOf(events, r.f.Policy)
		b, err := coders.DecodeEventBatch(coders.EncodeEventBatch(model.EventBatch{Events: events, Spans: spans, Since: since}))
		if err != nil || b.Coded == nil {
			t.Fatalf("admitted batch: %v, coded %v", err, b.Coded != nil)
		}
		return b
	}
	var out []model.EventBatch
	emit := func(shard int, b model.EventBatch) {
		if shard != 0 {
			t.Errorf("passed to shard %d, want 0", shard)
		}
		out = append(out, b)
	}
	process := func(b model.EventBatch) {
		r.f.StartBundle(nil, nil)
		if err := r.f.ProcessElement(context.Background(), r.sp, r.tp, 0, b, emit, r.tooLate); err != nil {
			t.Fatal(err)
		}
	}

	open := admitted("2026-11-04T10:05:00Z", "2026-11-04T10:06:00Z")
	process(open)
	if len(out) != 1 || out[0].Events != nil || &out[0].Coded[0] != &open.Coded[0] || out[0].N != 2 || out[0].Watermark != model.NoWatermark {
		t.Fatalf("an open batch passed as %+v, want its coded events as they came, with no watermark", out)
	}

	// The key learns that window 10:00 closed (its close timer fired).
	closed := r.f.Policy.CloseTime(at("2026-11-04T10:00:00Z"))
	r.fire(tagBoundary, closed)
	out = nil
	process(admitted("2026-11-04T10:07:00Z", "2026-11-05T10:30:00Z"))
	if len(r.late) != 1 || r.late[0].EventID != ids[0] {
		t.Fatalf("too late: %+v, want %s", r.late, ids[0])
	}
	if len(out) != 1 || out[0].Coded != nil || len(out[0].Events) != 1 || out[0].Events[0].EventID != ids[1] || out[0].Watermark != closed {
		t.Fatalf("passed %+v, want %s alone, decoded, with the watermark %d", out, ids[1], closed)
	}
}

// A Pending bag entry is marked with its coding: one this build holds is
// released as it was held; one without the mark (held by a build before the
// batch coding of 2026-12-06, restored from a savepoint) is refused, not
// misread.
func TestHeldBatchesCarryTheirCoding(t *testing.T) {
	p := rollbackPolicy
	h := heldBatches{bag: state.MakeBagState[[]byte]("pending"), timer: timers.InEventTime("boundary")}
	sp := &memShard{memState{values: map[string]any{}}, map[string][]any{}}
	e := model.Event{EventID: "A", EventTime: at("2026-11-04T10:05:00Z"), Partition: "p0", Position: "p0/000001.jsonl:1",
		WatermarkBefore: model.NoWatermark}
	until := at("2026-11-04T11:00:00Z")
	// restored is the key's state after a restore: the bag is read again.
	restored := func() *shardState { st := fresh(); st.pending.loaded = false; return st }
	st := fresh()
	if err := h.hold(sp, &recordTimers{}, st, model.EventBatch{Events: []model.Event{e}}, until); err != nil {
		t.Fatal(err)
	}
	got, err := h.release(sp, restored(), until+1, p)
	if err != nil || len(got) != 1 || got[0].EventID != "A" || got[0].EventTime != e.EventTime {
		t.Fatalf("released %+v, %v; want A as held", got, err)
	}

	// The same entry as the build before wrote it: wait, sequence number,
	// batch, no mark.
	old := coders.Writer{}
	old.Varint(until)
	old.Uvarint(0)
	old.B = append(old.B, coders.EncodeEventBatch(model.EventBatch{Events: []model.Event{e}})...)
	sp.bags = map[string][]any{}
	if err := h.bag.Add(sp, old.B); err != nil {
		t.Fatal(err)
	}
	if got, err := h.release(sp, restored(), until+1, p); err == nil || !strings.Contains(err.Error(), "start a new job") {
		t.Fatalf("an unmarked entry released %+v, %v; want it refused", got, err)
	}
}
