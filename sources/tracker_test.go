package sources

import (
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/watermark"
)

func TestTrackerClaimAndCheckpoint(t *testing.T) {
	start := newRestriction(1000)
	start.Read = []string{"a"}
	tr := sdfread.NewCheckpointTracker("source", start, false)
	if tr.IsDone() || tr.IsBounded() {
		t.Fatalf("new tracker done=%v bounded=%v", tr.IsDone(), tr.IsBounded())
	}
	// A split other than the self-checkpoint is refused: a partition is one
	// ordered sequence.
	if _, res, err := tr.TrySplit(0.5); res != nil || err != nil {
		t.Fatalf("split 0.5 = %v, %v; want refused", res, err)
	}

	s1 := start.Clone()
	s1.File, s1.Offset, s1.Line = "b", 10, 1
	if !tr.TryClaim(s1) {
		t.Fatal("claim refused")
	}
	s2 := s1.Clone()
	s2.Offset, s2.Line, s2.MaxValid = 25, 3, 5000
	if !tr.TryClaim(s2) {
		t.Fatal("claim refused")
	}
	if d, r := tr.GetProgress(); d != 2 || r != 1 {
		t.Errorf("progress = %v, %v", d, r)
	}

	prim, res, err := tr.TrySplit(0)
	if err != nil || res == nil {
		t.Fatalf("checkpoint = %v, %v, %v", prim, res, err)
	}
	p, r := prim.(restriction), res.(restriction)
	if !p.Closed || r.Closed || r.File != "b" || r.Offset != 25 || r.Line != 3 || r.MaxValid != 5000 {
		t.Errorf("primary %v residual %v", p, r)
	}
	if !tr.IsDone() || tr.GetError() != nil {
		t.Errorf("after checkpoint: done=%v err=%v", tr.IsDone(), tr.GetError())
	}
	if tr.TryClaim(s2) {
		t.Error("claim after checkpoint accepted: the residual owns the rest")
	}
	if _, res, _ := tr.TrySplit(0); res != nil {
		t.Error("second checkpoint produced a residual")
	}
	// The halves do not share the names they remember.
	r.Read[0] = "changed"
	if got := tr.GetRestriction().(restriction); got.Read[0] != "a" || !got.Closed {
		t.Errorf("tracker restriction %v read=%q", got, got.Read)
	}
	if d, rem := tr.GetProgress(); d != 2 || rem != 0 {
		t.Errorf("progress after checkpoint = %v, %v", d, rem)
	}
}

func TestTrackerClose(t *testing.T) {
	tr := sdfread.NewCheckpointTracker("source", newRestriction(0), true)
	end := newRestriction(0)
	end.Closed = true
	if !tr.TryClaim(end) || !tr.IsDone() || !tr.IsBounded() {
		t.Fatalf("closing claim: done=%v", tr.IsDone())
	}
	if tr.TryClaim(newRestriction(0)) {
		t.Error("claim after close accepted")
	}
	if _, res, err := tr.TrySplit(0); res != nil || err != nil {
		t.Errorf("checkpoint of a closed restriction = %v, %v", res, err)
	}
}

func TestTrackerBadClaim(t *testing.T) {
	tr := sdfread.NewCheckpointTracker("source", newRestriction(0), true)
	if tr.TryClaim(int64(3)) || tr.GetError() == nil {
		t.Fatal("claim of a wrong type accepted")
	}
	if _, _, err := tr.TrySplit(0); err == nil {
		t.Error("split after an error: no error")
	}
}

func TestRestrictionCoder(t *testing.T) {
	r := restriction{
		File: "000007.jsonl", Offset: 1 << 40, Line: 123456, Floor: "000001.jsonl", FloorFiles: -1,
		Read: []string{"000002.jsonl", "000005.jsonl"}, State: watermark.State{MaxValid: model.NoWatermark, LastActive: 1_800_000_000_000,
			Idle: true, Reported: -5, Holding: true, Hold: 7}, Closed: true,
	}
	got, err := decodeRestriction(encodeRestriction(r))
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != r.String() || !slices.Equal(got.Read, r.Read) || got.FloorFiles != -1 || got.State != r.State {
		t.Errorf("round trip\n got %v\nwant %v", got, r)
	}
	enc := encodeRestriction(r)
	for _, bad := range [][]byte{nil, enc[:len(enc)-1], append(enc, 0), append([]byte{9}, enc[1:]...)} {
		if _, err := decodeRestriction(bad); err == nil {
			t.Errorf("decode of %x accepted", bad)
		}
	}
}

func TestRestrictionPrune(t *testing.T) {
	var r restriction
	var listed []string
	for i := range maxRemembered + 1 {
		name := string(rune('A'+i/26)) + string(rune('a'+i%26))
		listed = append(listed, name)
		r.markRead(name)
	}
	r.prune(listed)
	if len(r.Read) != maxRemembered/2 || r.Floor != r.Read[0] || r.FloorFiles != maxRemembered+1-maxRemembered/2 {
		t.Fatalf("pruned: floor %q (%d below), %d names", r.Floor, r.FloorFiles, len(r.Read))
	}
	for _, name := range listed {
		if !r.isRead(name) {
			t.Fatalf("%q forgotten", name)
		}
	}

	// The floor never passes a listed file that is not read yet.
	var q restriction
	listed = listed[:0]
	for i := range maxRemembered + 2 {
		name := string(rune('A'+i/26)) + string(rune('a'+i%26))
		listed = append(listed, name)
		if i != 3 {
			q.markRead(name)
		}
	}
	q.prune(listed)
	if q.isRead(listed[3]) || q.Floor != listed[3] || q.FloorFiles != 3 {
		t.Errorf("floor %q passed the unread %q", q.Floor, listed[3])
	}
}
