package transforms

import (
	"fmt"
	"hash/fnv"
	"runtime"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
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
		name string
		e    *model.Event
		want Judgement
	}{
		{"first copy counts", ev("A", "2026-11-04T10:15:00Z", 1), Judgement{Verdict: event.Counted}},
		{"identical copy is a duplicate", ev("A", "2026-11-04T10:15:00Z", 1), Judgement{Verdict: event.Duplicate}},
		{"other payload is a conflict naming the counted one", ev("A", "2026-11-04T10:15:00Z", 2), Judgement{Verdict: event.Conflict, First: 1}},
		{"another id counts", ev("C", "2026-11-04T10:50:00Z", 3), Judgement{Verdict: event.Counted}},
	}
	for _, s := range steps {
		got := st.Judge(s.e, p)
		if got.Verdict != s.want.Verdict || got.First != s.want.First {
			t.Errorf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
}

// Rule (b) at the watermark gate, before any dedup verdict: a record of a
// closed window is too late, even a copy; one after its window's end is
// late data; either way it is stamped with the watermark the gate knew.
func TestGateRuleB(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	steps := []struct {
		name      string
		known     int64
		e         model.Event
		pass, end bool
	}{
		{"no watermark yet: on time", model.NoWatermark, model.Event{EventID: "A", EventTime: at("2026-11-04T10:15:00Z")}, true, false},
		{"1 ms before the end: on time", at("2026-11-04T10:59:59.999Z"), model.Event{EventID: "B", EventTime: at("2026-11-04T10:50:00Z")}, true, false},
		{"data after window end is late data", at("2026-11-04T11:00:00Z"), model.Event{EventID: "C", EventTime: at("2026-11-04T10:50:00Z")}, true, true},
		{"one ms before close is open", at("2026-11-05T10:59:59.999Z"), model.Event{EventID: "E", EventTime: at("2026-11-04T10:10:00Z")}, true, true},
		{"at close: too late, even for a copy", at("2026-11-05T11:00:00Z"), model.Event{EventID: "A", EventTime: at("2026-11-04T10:15:00Z")}, false, false},
	}
	for _, s := range steps {
		st := fresh()
		st.known = s.known
		e := s.e
		if got := st.Gate(&e, p); got != s.pass || e.AfterEnd != s.end || (got && e.PipelineWatermark != s.known) {
			t.Errorf("%s: passed %v afterEnd=%v watermark %d, want %v afterEnd=%v watermark %d", s.name, got, e.AfterEnd, e.PipelineWatermark, s.pass, s.end, s.known)
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
	// A window's ids go together at window_end + retention.
	st.known = at("2026-11-05T11:59:59.999Z")
	if n := st.Expire(retention, p); n != 0 {
		t.Fatalf("expired %d ids 1 ms before the window's retention ends, want 0", n)
	}
	st.known = at("2026-11-05T12:00:00Z")
	if n := st.Expire(retention, p); n != 1 {
		t.Fatalf("expired %d ids at the window's retention end, want 1", n)
	}
	token, back, err := decodeMeta(encodeMeta(42, st), model.NoWatermark)
	if err != nil {
		t.Fatal(err)
	}
	// An expired window's blob still in the bag (compaction is lazy) is
	// counted in stored but not remembered.
	var expired, extra idBlobs
	expired.add(at("2026-11-04T10:00:00Z"), hashID("old"), 1)
	extra.add(at("2026-11-05T01:00:00Z"), hashID("late-added"), 9)
	blobs := append(append([][]byte{expired.blob()}, st.compact(p)...), extra.blob())
	if err := back.loadIDs(blobs, p, retention); err != nil {
		t.Fatal(err)
	}
	if _, ok := back.ids.get(hashID("old")); ok || back.stored != 3 {
		t.Fatalf("loaded stored=%d, old remembered=%v; want 3 entries, old forgotten", back.stored, ok)
	}
	if fp, ok := back.ids.get(hashID("late-added")); !ok || fp != 9 {
		t.Fatalf("late-added: fp %d, %v", fp, ok)
	}
	if fp, _ := back.ids.get(hashID("new")); token != 42 || back.known != st.known || back.ids.n != 2 || fp != 2 || !back.armed[at("2026-11-04T10:00:00Z")] {
		t.Fatalf("round trip lost state: %+v vs %+v", back, st)
	}
	// A restart seed never lowers what the shard knows.
	if _, seeded, _ := decodeMeta(encodeMeta(1, st), at("2026-11-06T00:00:00Z")); seeded.known != at("2026-11-06T00:00:00Z") {
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
	return newShardState(model.NoWatermark)
}

// BenchmarkStateBytesPerID measures what one remembered event_id costs: in
// the runner's state (encoded blob bytes) and in the decoded table, and how
// fast a shard's blobs load (a cache miss).
func BenchmarkStateBytesPerID(b *testing.B) {
	const n = 1_000_000
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	base := at("2026-11-04T10:00:00Z")
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	st := fresh()
	for i := 0; i < n; i++ {
		e := model.Event{EventID: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, i%65536, i%4096, i%4096, i), EventTime: base + int64(i)*36, Fingerprint: uint64(i) * 0x9e3779b97f4a7c15}
		st.Judge(&e, p)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	blobs := st.compact(p)
	size := 0
	for _, bl := range blobs {
		size += len(bl)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		back := fresh()
		if err := back.loadIDs(blobs, p, (25 * time.Hour).Milliseconds()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/n, "state-bytes/id")
	b.ReportMetric(float64(ms1.HeapAlloc-ms0.HeapAlloc)/n, "heap-bytes/id")
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
	for i, ts := range []string{"2026-11-04T10:00:00Z", "2026-11-04T10:20:00Z", "2026-11-04T11:40:00Z", "2026-11-04T11:59:59.999Z", "2026-11-04T12:30:00Z"} {
		st.Judge(&model.Event{EventID: fmt.Sprint("id", i), EventTime: at(ts)}, p)
	}
	st.stored = 5 // as appended to the bag
	// The 10:00 window's two ids, not the 11:00 window's.
	st.known = at("2026-11-05T12:20:00Z")
	if n := st.Expire(retention, p); n != 2 || st.ids.n != 3 {
		t.Fatalf("expired %d, kept %d; want 2 expired, 3 kept", n, st.ids.n)
	}
	if st.NeedsCompaction() {
		t.Fatal("compaction with 3 of 5 entries live")
	}
	st.known = at("2026-11-05T13:00:00Z")
	if n := st.Expire(retention, p); n != 2 || st.ids.n != 1 {
		t.Fatalf("expired %d, left %d ids; want 2 expired, one left", n, st.ids.n)
	}
	if !st.NeedsCompaction() {
		t.Fatal("no compaction with 1 of 5 entries live")
	}
	if _, ok := st.ids.get(hashID("id4")); !ok {
		t.Fatal("the 12:00 window's id was forgotten")
	}
}

func TestIDTableGrowFilterAndBytes(t *testing.T) {
	var tb idTable
	const n = 100_000
	for i := 0; i < n; i++ {
		tb.put(hashID(fmt.Sprint(i)), uint64(i), uint32(i%3))
		if per := float64(tb.bytes()) / float64(tb.n); tb.n > 1000 && per > 64 {
			t.Fatalf("%d ids cost %.1f bytes each, want at most 64", tb.n, per)
		}
	}
	if fp, ok := tb.get(hashID("4242")); !ok || fp != 4242 {
		t.Fatalf("get 4242: %d %v", fp, ok)
	}
	if dropped := tb.filter(func(w uint32) bool { return w != 0 }); dropped != (n+2)/3 || tb.n != n-dropped {
		t.Fatalf("filter dropped %d, left %d", dropped, tb.n)
	}
	if _, ok := tb.get(hashID("3")); ok {
		t.Fatal("a filtered id is still remembered")
	}
	if fp, ok := tb.get(hashID("4")); !ok || fp != 4 {
		t.Fatal("a kept id was lost")
	}
}

func TestCompactionChunksAreBounded(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	st := fresh()
	for i := 0; i < compactChunkIDs+10; i++ {
		st.Judge(&model.Event{EventID: fmt.Sprint(i), EventTime: at("2026-11-04T10:00:00Z") + int64(i), Fingerprint: 7}, p)
	}
	blobs := st.compact(p)
	if len(blobs) != 2 {
		t.Fatalf("%d blobs, want 2", len(blobs))
	}
	for _, b := range blobs {
		if len(b) > compactChunkIDs*idEntryBytes+10 {
			t.Fatalf("blob of %d bytes exceeds the chunk bound", len(b))
		}
	}
	back := fresh()
	if err := back.loadIDs(blobs, p, (25 * time.Hour).Milliseconds()); err != nil || back.ids.n != st.ids.n {
		t.Fatalf("reloaded %d of %d ids: %v", back.ids.n, st.ids.n, err)
	}
}

func TestShardCacheBoundAndIdleEviction(t *testing.T) {
	c := newShardCacheT()
	clock := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	shard := func(ids int) *shardState {
		st := fresh()
		for i := 0; i < ids; i++ {
			st.Judge(&model.Event{EventID: fmt.Sprint(i), EventTime: at("2026-11-04T10:00:00Z")}, p)
		}
		return st
	}
	one := shardBytes(shard(1000))
	c.setLimit(3*one + one/2)
	for i := 0; i < 3; i++ {
		if n := c.put(cacheKey{"p", i}, 1, shard(1000)); n != 0 {
			t.Fatalf("put %d evicted %d under the bound", i, n)
		}
		clock = clock.Add(time.Second)
	}
	// Shard 0 is used again (taken and put back): shard 1 is now the least
	// recently used and goes when a fourth shard exceeds the bound.
	e, ok := c.take(cacheKey{"p", 0})
	if !ok {
		t.Fatal("shard 0 not cached")
	}
	c.put(cacheKey{"p", 0}, e.token, e.st)
	clock = clock.Add(time.Second)
	if n := c.put(cacheKey{"p", 3}, 1, shard(1000)); n != 1 {
		t.Fatalf("fourth shard evicted %d, want 1", n)
	}
	if _, ok := c.take(cacheKey{"p", 1}); ok {
		t.Fatal("the least recently used shard was kept")
	}
	if n, b := c.size(); n != 3 || b > 3*one+one/2 {
		t.Fatalf("cache holds %d shards, %d bytes", n, b)
	}
	// A shard this process no longer owns is never asked for again: it goes
	// after the idle TTL, while one in use stays.
	// Shard 2 was last used at +2s, shard 0 at +3s, shard 3 at +4s.
	clock = clock.Add(cacheIdleTTL - time.Second) // +TTL+3s
	if n := c.put(cacheKey{"p", 3}, 2, shard(10)); n != 1 {
		t.Fatalf("idle sweep evicted %d, want 1 (shard 2)", n)
	}
	clock = clock.Add(cacheIdleTTL/4 + time.Second)
	if n := c.put(cacheKey{"p", 3}, 3, shard(10)); n != 1 {
		t.Fatalf("idle sweep evicted %d, want 1 (shard 0)", n)
	}
	if _, ok := c.take(cacheKey{"p", 0}); ok {
		t.Fatal("an idle shard was kept")
	}
	if e, ok := c.take(cacheKey{"p", 3}); !ok || e.token != 3 {
		t.Fatal("the shard in use was evicted")
	}
}

// A batch's ids go to the bag as one blob, one section per window, however
// many windows they fall in (two State API round trips per append); blobs
// in the format before sections still load, and a section that claims more
// ids than its blob holds is an error.
func TestIDBlobOneAppendPerBatch(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	retention := (25 * time.Hour).Milliseconds()
	st := fresh()
	var added idBlobs
	for i, ts := range []string{"2026-11-04T10:05:00Z", "2026-11-04T13:05:00Z", "2026-11-04T10:25:00Z", "2026-11-04T17:45:00Z"} {
		e := model.Event{EventID: fmt.Sprint("id", i), EventTime: at(ts), Fingerprint: uint64(i + 1)}
		if v := st.Judge(&e, p); v.Verdict == event.Counted {
			added.add(v.window, v.id, e.Fingerprint)
		}
	}
	blob := added.blob()
	secs, err := idSections(blob)
	if err != nil || len(secs) != 3 || secs[0].start != at("2026-11-04T10:00:00Z") || len(secs[0].entries) != 2*idEntryBytes {
		t.Fatalf("one blob for ids in 3 windows: %d sections (%v), want 3, the first with 2 ids", len(secs), err)
	}
	old := coders.Writer{}
	old.Varint(at("2026-11-04T09:00:00Z"))
	k := hashID("before")
	old.Fixed64(k.lo)
	old.Fixed64(k.hi)
	old.Fixed64(77)
	back := fresh()
	if err := back.loadIDs([][]byte{blob, old.B}, p, retention); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if fp, ok := back.ids.get(hashID(fmt.Sprint("id", i))); !ok || fp != uint64(i+1) {
			t.Errorf("id%d: fingerprint %d, %v; want %d", i, fp, ok, i+1)
		}
	}
	if fp, ok := back.ids.get(k); !ok || fp != 77 || back.stored != 5 {
		t.Errorf("old-format blob: fingerprint %d, %v, stored %d; want 77 and 5 entries", fp, ok, back.stored)
	}
	if (&idBlobs{}).blob() != nil {
		t.Error("a batch that counted nothing appends a blob")
	}
	if _, err := idSections(blob[:len(blob)-1]); err == nil {
		t.Error("a truncated blob decodes")
	}
}
