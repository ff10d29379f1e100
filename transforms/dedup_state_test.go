package transforms

import (
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestJudgeOrderAndVerdicts(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	st, err := decodeShard(nil, model.NoWatermark)
	if err != nil {
		t.Fatal(err)
	}
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
	st, _ := decodeShard(nil, model.NoWatermark)
	for _, e := range []*model.Event{
		{EventID: "old", EventTime: at("2026-11-04T10:15:00Z"), Fingerprint: 1},
		{EventID: "new", EventTime: at("2026-11-04T12:15:00Z"), Fingerprint: 2},
	} {
		st.Judge(e, p)
	}
	st.armed[at("2026-11-04T10:00:00Z")] = true
	retention := (25 * time.Hour).Milliseconds()
	st.known = at("2026-11-05T11:14:59.999Z")
	if n := st.Expire(retention); n != 0 {
		t.Fatalf("expired %d ids 1 ms before retention ends, want 0", n)
	}
	st.known = at("2026-11-05T11:15:00Z")
	if n := st.Expire(retention); n != 1 {
		t.Fatalf("expired %d ids at retention end, want 1", n)
	}
	back, err := decodeShard(st.encode(), model.NoWatermark)
	if err != nil {
		t.Fatal(err)
	}
	if back.known != st.known || len(back.ids) != 1 || back.ids["new"] != st.ids["new"] || !back.armed[at("2026-11-04T10:00:00Z")] {
		t.Fatalf("round trip lost state: %+v vs %+v", back, st)
	}
	// A restart seed never lowers what the shard knows.
	if seeded, _ := decodeShard(st.encode(), at("2026-11-06T00:00:00Z")); seeded.known != at("2026-11-06T00:00:00Z") {
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
