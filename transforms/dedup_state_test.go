package transforms

import (
	"fmt"
	"hash/fnv"
	"runtime"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/triggers"
)

var at = rowtest.MS

func TestJudgeOrderAndVerdicts(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	st := fresh()
	ev := func(id, ts string, fp uint64) *model.Event {
		return &model.Event{EventID: id, EventTime: at(ts), Fingerprint: fp}
	}
	steps := []struct {
		name  string
		known int64
		e     *model.Event
		want  Judgement
		after bool
	}{
		{"first copy counts", model.NoWatermark, ev("A", "2026-11-04T10:15:00Z", 1), Judgement{Verdict: CountVerdict}, false},
		{"identical copy is a duplicate", model.NoWatermark, ev("A", "2026-11-04T10:15:00Z", 1), Judgement{Verdict: DuplicateVerdict}, false},
		{"other payload is a conflict naming the counted one", model.NoWatermark, ev("A", "2026-11-04T10:15:00Z", 2), Judgement{Verdict: ConflictVerdict, First: 1}, false},
		{"data after window end is late data", at("2026-11-04T11:00:00Z"), ev("C", "2026-11-04T10:50:00Z", 3), Judgement{Verdict: CountVerdict}, true},
		{"one ms before close is open", at("2026-11-05T10:59:59.999Z"), ev("E", "2026-11-04T10:10:00Z", 4), Judgement{Verdict: CountVerdict}, true},
		{"at close: too late, even for a copy", at("2026-11-05T11:00:00Z"), ev("A", "2026-11-04T10:15:00Z", 1), Judgement{Verdict: TooLateVerdict}, false},
	}
	for _, s := range steps {
		st.known = s.known
		got := st.Judge(s.e, p)
		if got != s.want || s.e.AfterEnd != s.after {
			t.Errorf("%s: got %+v afterEnd=%v, want %+v afterEnd=%v", s.name, got, s.e.AfterEnd, s.want, s.after)
		}
	}
}

func TestExpireAndStateRoundTrip(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	st := fresh()
	for _, e := range []*model.Event{
		{EventID: "old", EventTime: at("2026-11-04T10:15:00Z"), Fingerprint: 1},
		{EventID: "new", EventTime: at("2026-11-04T12:15:00Z"), Fingerprint: 2},
	} {
		st.Judge(e, p)
	}
	st.armed[at("2026-11-04T10:00:00Z")] = true
	retention := (25 * time.Hour).Milliseconds()
	st.known = at("2026-11-05T11:14:59.999Z")
	if n := st.Expire(retention, p); n != 0 {
		t.Fatalf("expired %d ids 1 ms before retention ends, want 0", n)
	}
	st.known = at("2026-11-05T11:15:00Z")
	if n := st.Expire(retention, p); n != 1 {
		t.Fatalf("expired %d ids at retention end, want 1", n)
	}
	m, err := decodeMeta(encodeMeta(42, st), model.NoWatermark)
	if err != nil {
		t.Fatal(err)
	}
	back := newShardState(m)
	var extra idBlob
	// An expired entry still in the bag (compaction is lazy) is counted in
	// stored but not remembered.
	var expired idBlob
	expired.add("old", idEntry{eventTime: at("2026-11-04T10:15:00Z"), fingerprint: 1})
	extra.add("late-added", idEntry{eventTime: at("2026-11-05T01:00:00Z"), fingerprint: 9})
	if err := back.loadIDs([][]byte{expired.w.B, st.encodeIDs(), extra.w.B}, p, retention); err != nil {
		t.Fatal(err)
	}
	if back.stored != 3 || back.ids["old"] != (idEntry{}) || len(back.byWindow[at("2026-11-05T01:00:00Z")]) != 1 {
		t.Fatalf("loaded stored=%d ids=%v byWindow=%v; want 3 entries, old not remembered, late-added indexed", back.stored, back.ids, back.byWindow)
	}
	if m.token != 42 || back.known != st.known || len(back.ids) != 2 || back.ids["new"] != st.ids["new"] || !back.armed[at("2026-11-04T10:00:00Z")] {
		t.Fatalf("round trip lost state: %+v vs %+v", back, st)
	}
	// A restart seed never lowers what the shard knows.
	if seeded, _ := decodeMeta(encodeMeta(1, st), at("2026-11-06T00:00:00Z")); seeded.known != at("2026-11-06T00:00:00Z") {
		t.Fatalf("seed not applied: %d", seeded.known)
	}
}

func TestDedupOptionsRefuseShortRetention(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	o := DedupOptions{Policy: p, Retention: (25*time.Hour - time.Millisecond).Milliseconds(), Shards: 4}
	if err := o.Validate(); err == nil {
		t.Fatal("retention below window + lateness accepted")
	}
	o.Retention = (25 * time.Hour).Milliseconds()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

func fresh() *shardState {
	return newShardState(shardMeta{known: model.NoWatermark, armed: map[int64]bool{}})
}

// BenchmarkStateBytesPerID measures what one remembered event_id costs: in
// the runner's state (encoded blob bytes) and in the SDK's decoded map.
func BenchmarkStateBytesPerID(b *testing.B) {
	const n = 100_000
	st := fresh()
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	base := at("2026-11-04T10:00:00Z")
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for i := 0; i < n; i++ {
		e := model.Event{EventID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, i%65536, i%4096, i%4096, i), EventTime: base + int64(i)*36, Fingerprint: uint64(i) * 0x9e3779b97f4a7c15}
		st.Judge(&e, p)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	blob := st.encodeIDs()
	b.ReportMetric(float64(len(blob))/n, "state-bytes/id")
	b.ReportMetric(float64(ms1.HeapAlloc-ms0.HeapAlloc)/n, "heap-bytes/id")
	for i := 0; i < b.N; i++ {
		back := fresh()
		if err := back.loadIDs([][]byte{blob}, p, (25 * time.Hour).Milliseconds()); err != nil {
			b.Fatal(err)
		}
	}
}

func TestShardOfIsFNV1a(t *testing.T) {
	// Reconcile groups ids with the same function: its values must not drift.
	for _, id := range []string{"", "a1", "8f14e45f-ceea-467e-a2d4-f1a7e2c1b3d5"} {
		h := fnv.New32a()
		h.Write([]byte(id))
		if got, want := ShardOf(id, 64), int(h.Sum32()%64); got != want {
			t.Errorf("ShardOf(%q) = %d, want %d", id, got, want)
		}
	}
}

func TestExpireByWindowAndLazyCompaction(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	retention := (25 * time.Hour).Milliseconds()
	st := fresh()
	for i, ts := range []string{"2026-11-04T10:00:00Z", "2026-11-04T10:20:00Z", "2026-11-04T10:40:00Z", "2026-11-04T10:59:59.999Z", "2026-11-04T11:30:00Z"} {
		st.Judge(&model.Event{EventID: fmt.Sprint("id", i), EventTime: at(ts)}, p)
	}
	st.stored = 5 // as appended to the bag
	// Part of the 10:00 window: the ids of 10:00 and 10:20 only.
	st.known = at("2026-11-05T11:20:00Z")
	if n := st.Expire(retention, p); n != 2 || len(st.byWindow[at("2026-11-04T10:00:00Z")]) != 2 {
		t.Fatalf("expired %d, window keeps %v; want 2 expired, 2 kept", n, st.byWindow)
	}
	if st.NeedsCompaction() {
		t.Fatal("compaction with 3 of 5 entries live")
	}
	// The whole window.
	st.known = at("2026-11-05T12:00:00Z")
	if n := st.Expire(retention, p); n != 2 || len(st.ids) != 1 || len(st.byWindow) != 1 {
		t.Fatalf("expired %d, left ids %v windows %v; want 2 expired, one id in one window", n, st.ids, st.byWindow)
	}
	if !st.NeedsCompaction() {
		t.Fatal("no compaction with 1 of 5 entries live")
	}
}
