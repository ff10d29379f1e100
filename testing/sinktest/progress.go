package sinktest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// progressUnderTest is a fresh sink for the progress conformance tests: w
// takes the workers' writes, p is the launcher's handle (OpenProgress),
// resumeStored renders what source_resume physically holds (so that a
// second seal of the same points is seen to store nothing), and prunes says
// whether PruneCheckpoints deletes (jsonl documents a no-op).
type ProgressUnder struct {
	W            sink.Sink
	P            sink.ProgressStore
	ResumeStored func(t *testing.T) string
	Prunes       bool
}

func ProgressConformance(t *testing.T, open func(t *testing.T) ProgressUnder) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, u ProgressUnder)
	}{
		{"RunCheckpoints", testRunCheckpoints},
		{"SealResume", testSealResume},
		{"PruneCheckpoints", testPruneCheckpoints},
		{"EarliestOpenWindow", testEarliestOpenWindow},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

func OpenProgress(t *testing.T, spec sink.Spec) sink.ProgressStore {
	t.Helper()
	p, ok, err := sink.OpenProgress(context.Background(), spec)
	if err != nil || !ok {
		t.Fatalf("OpenProgress(%s) = %v, %v", spec, ok, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func CP(partition, file string, offset int64, line int, maxValid int64, run string) model.Checkpoint {
	return model.Checkpoint{Partition: partition, File: file, Offset: offset, Line: line, MaxValid: maxValid, Run: run}
}

func runCheckpoints(t *testing.T, p sink.ProgressStore, run string) []model.Checkpoint {
	t.Helper()
	got, err := p.RunCheckpoints(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func resumePoints(t *testing.T, p sink.ProgressStore) []model.Checkpoint {
	t.Helper()
	got, err := p.ResumePoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func WantCheckpoints(t *testing.T, what string, got, want []model.Checkpoint) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %+v\nwant %+v", what, got, want)
	}
}

// twoRuns writes the checkpoints of two runs that both read p0/a.jsonl
// (the second after a restart), with retried copies, and returns them.
func twoRuns(t *testing.T, w sink.Sink) (r1, r2 []model.Checkpoint) {
	r1 = []model.Checkpoint{CP("p0", "a.jsonl", 100, 10, 5_000, "r1"), CP("p1", "a.jsonl", 30, 3, model.NoWatermark, "r1")}
	r2 = []model.Checkpoint{CP("p0", "a.jsonl", 100, 10, 5_000, "r2"), CP("p0", "b.jsonl", 40, 4, 9_000, "r2")}
	Write(t, w, sink.Batch{Progress: []model.Checkpoint{r1[1], r1[0]}})
	Write(t, w, sink.Batch{Progress: r1[:1]}) // a retried bundle
	Write(t, w, sink.Batch{Progress: r2})
	Write(t, w, sink.Batch{Progress: r2})
	return r1, r2
}

func testRunCheckpoints(t *testing.T, u ProgressUnder) {
	WantCheckpoints(t, "no run yet", runCheckpoints(t, u.P, "r1"), nil)
	r1, r2 := twoRuns(t, u.W)
	// Ordered by partition, then file; one per file however often sent.
	WantCheckpoints(t, "r1's checkpoints", runCheckpoints(t, u.P, "r1"), r1)
	WantCheckpoints(t, "r2's checkpoints", runCheckpoints(t, u.P, "r2"), r2)
	WantCheckpoints(t, "r3's checkpoints", runCheckpoints(t, u.P, "r3"), nil)
	// A progress batch counts as neither rows nor audit rows.
	WantResult(t, Write(t, u.W, sink.Batch{Progress: r2}), sink.Result{})
}

func testSealResume(t *testing.T, u ProgressUnder) {
	ctx := context.Background()
	WantCheckpoints(t, "nothing sealed", resumePoints(t, u.P), nil)
	first := []model.Checkpoint{CP("p1", "a.jsonl", 30, 3, model.NoWatermark, "r1"), CP("p0", "a.jsonl", 100, 10, 5_000, "r1")}
	if err := u.P.SealResume(ctx, first); err != nil {
		t.Fatal(err)
	}
	WantCheckpoints(t, "first seal", resumePoints(t, u.P), []model.Checkpoint{first[1], first[0]})

	// A later seal replaces its partitions' points and keeps the others.
	later := CP("p0", "b.jsonl", 40, 4, 9_000, "r2")
	if err := u.P.SealResume(ctx, []model.Checkpoint{later}); err != nil {
		t.Fatal(err)
	}
	want := []model.Checkpoint{later, first[0]}
	WantCheckpoints(t, "second seal", resumePoints(t, u.P), want)

	// Sealing the same points again stores nothing. The wait makes a
	// rewrite visible: sealed_at is stored to the millisecond.
	stored := u.ResumeStored(t)
	time.Sleep(5 * time.Millisecond)
	if err := u.P.SealResume(ctx, want); err != nil {
		t.Fatal(err)
	}
	if again := u.ResumeStored(t); again != stored {
		t.Fatalf("re-sealing the same points changed source_resume:\n%s\nthen\n%s", stored, again)
	}
	WantCheckpoints(t, "after re-sealing", resumePoints(t, u.P), want)

	// Going back to an earlier point is a replacement like any other.
	if err := u.P.SealResume(ctx, first[1:]); err != nil {
		t.Fatal(err)
	}
	WantCheckpoints(t, "after sealing p0's earlier point", resumePoints(t, u.P), []model.Checkpoint{first[1], first[0]})

	for _, bad := range [][]model.Checkpoint{
		{later, later},
		{CP("p2", "a.jsonl", 1, 1, 1, "")},
		{CP("", "a.jsonl", 1, 1, 1, "r2")},
	} {
		if err := u.P.SealResume(ctx, bad); err == nil {
			t.Errorf("SealResume(%+v) accepted", bad)
		}
	}
	WantCheckpoints(t, "after refused seals", resumePoints(t, u.P), []model.Checkpoint{first[1], first[0]})
}

func testPruneCheckpoints(t *testing.T, u ProgressUnder) {
	r1, r2 := twoRuns(t, u.W)
	if err := u.P.PruneCheckpoints(context.Background(), "r2"); err != nil {
		t.Fatal(err)
	}
	WantCheckpoints(t, "kept run's checkpoints", runCheckpoints(t, u.P, "r2"), r2)
	if u.Prunes {
		r1 = nil
	}
	WantCheckpoints(t, "pruned run's checkpoints", runCheckpoints(t, u.P, "r1"), r1)
}

func testEarliestOpenWindow(t *testing.T, u ProgressUnder) {
	ctx := context.Background()
	earliest := func(what string, wantOK bool, want string) {
		t.Helper()
		got, ok, err := u.P.EarliestOpenWindow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok != wantOK || (ok && got != MS(want)) {
			t.Fatalf("%s: EarliestOpenWindow = %s, %v; want %s, %v", what, model.FormatTime(got), ok, want, wantOK)
		}
	}
	earliest("empty sink", false, "")
	Write(t, u.W, sink.Batch{Rows: []model.Row{
		Snap(t, "2026-11-04T07:00:00Z", "{}", 3, model.Final, 1, 1),
		Snap(t, "2026-11-04T08:00:00Z", "{}", 2, model.Final, 1, 1),
		Snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 1, model.OnTime, 1, 1),
		Snap(t, "2026-11-04T09:00:00Z", "{}", 3, model.Final, 1, 1),
		Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.Early, 1, 1),
	}})
	earliest("one open key at 09:00", true, "2026-11-04T09:00:00Z")
	// Its earlier revisions were open; the current one is FINAL.
	Write(t, u.W, sink.Batch{Rows: []model.Row{Snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 2, model.Final, 1, 1)}})
	earliest("09:00 final", true, "2026-11-04T10:00:00Z")
	Write(t, u.W, sink.Batch{Rows: []model.Row{Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 1, 1)}})
	earliest("every row final", false, "")
}
