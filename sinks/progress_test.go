package sinks

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
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
type progressUnderTest struct {
	w            sink.Sink
	p            sink.ProgressStore
	resumeStored func(t *testing.T) string
	prunes       bool
}

func progressConformance(t *testing.T, open func(t *testing.T) progressUnderTest) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, u progressUnderTest)
	}{
		{"RunCheckpoints", testRunCheckpoints},
		{"SealResume", testSealResume},
		{"PruneCheckpoints", testPruneCheckpoints},
		{"EarliestOpenWindow", testEarliestOpenWindow},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

func TestSQLiteProgress(t *testing.T) {
	progressConformance(t, func(t *testing.T) progressUnderTest {
		path := filepath.Join(t.TempDir(), "revenue.db")
		s := openTestSQLite(t, path)
		p := openTestProgress(t, sink.Spec{Scheme: sink.SchemeSQLite, Path: path})
		return progressUnderTest{w: s, p: p, prunes: true, resumeStored: func(t *testing.T) string {
			var out []string
			err := s.query(context.Background(), "raw", `SELECT "partition", "file", "run", sealed_at FROM source_resume ORDER BY "partition"`,
				func(rs *sql.Rows) error {
					var p, f, r, at string
					if err := rs.Scan(&p, &f, &r, &at); err != nil {
						return err
					}
					out = append(out, strings.Join([]string{p, f, r, at}, " "))
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, "\n")
		}}
	})
}

func TestJSONLProgress(t *testing.T) {
	progressConformance(t, func(t *testing.T) progressUnderTest {
		dir := filepath.Join(t.TempDir(), "out")
		j, err := OpenJSONL(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		p := openTestProgress(t, sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
		// The launcher's handle writes no batch: the workers' files are
		// theirs.
		if _, err := p.Write(context.Background(), sink.Batch{Progress: []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}}); err == nil {
			t.Fatal("OpenProgress's jsonl handle wrote a batch")
		}
		// A reader's handle seals nothing either.
		r, ok, err := OpenReader(context.Background(), sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
		if err != nil || !ok {
			t.Fatalf("OpenReader = %v, %v", ok, err)
		}
		if err := r.(sink.ProgressStore).SealResume(context.Background(), []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}); err == nil {
			t.Fatal("OpenReader's jsonl handle sealed a resume point")
		}
		return progressUnderTest{w: j, p: p, resumeStored: func(t *testing.T) string {
			data, err := os.ReadFile(filepath.Join(dir, FileResume))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return string(data)
		}}
	})
}

func TestBigQueryProgress(t *testing.T) {
	progressConformance(t, func(t *testing.T) progressUnderTest {
		s := openTestBigQuery(t)
		return progressUnderTest{w: s, p: s, prunes: true, resumeStored: func(t *testing.T) string {
			return strconv.FormatInt(bqScalar(t, s, "SELECT COUNT(*) AS n FROM "+s.table(bqResume)), 10)
		}}
	})
}

// OpenProgress is false for what keeps no progress or does not exist yet.
func TestOpenProgressOfNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, spec := range []sink.Spec{{Scheme: sink.SchemeConsole}, {Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "none.db")},
		{Scheme: sink.SchemeJSONL, Path: filepath.Join(dir, "none")}} {
		p, ok, err := OpenProgress(ctx, spec)
		if p != nil || ok || err != nil {
			t.Errorf("OpenProgress(%s) = %v, %v, %v; want nothing", spec, p, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("OpenProgress created the SQLite file: %v", err)
	}
}

func openTestProgress(t *testing.T, spec sink.Spec) sink.ProgressStore {
	t.Helper()
	p, ok, err := OpenProgress(context.Background(), spec)
	if err != nil || !ok {
		t.Fatalf("OpenProgress(%s) = %v, %v", spec, ok, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func cp(partition, file string, offset int64, line int, maxValid int64, run string) model.Checkpoint {
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

func wantCheckpoints(t *testing.T, what string, got, want []model.Checkpoint) {
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
	r1 = []model.Checkpoint{cp("p0", "a.jsonl", 100, 10, 5_000, "r1"), cp("p1", "a.jsonl", 30, 3, model.NoWatermark, "r1")}
	r2 = []model.Checkpoint{cp("p0", "a.jsonl", 100, 10, 5_000, "r2"), cp("p0", "b.jsonl", 40, 4, 9_000, "r2")}
	write(t, w, sink.Batch{Progress: []model.Checkpoint{r1[1], r1[0]}})
	write(t, w, sink.Batch{Progress: r1[:1]}) // a retried bundle
	write(t, w, sink.Batch{Progress: r2})
	write(t, w, sink.Batch{Progress: r2})
	return r1, r2
}

func testRunCheckpoints(t *testing.T, u progressUnderTest) {
	wantCheckpoints(t, "no run yet", runCheckpoints(t, u.p, "r1"), nil)
	r1, r2 := twoRuns(t, u.w)
	// Ordered by partition, then file; one per file however often sent.
	wantCheckpoints(t, "r1's checkpoints", runCheckpoints(t, u.p, "r1"), r1)
	wantCheckpoints(t, "r2's checkpoints", runCheckpoints(t, u.p, "r2"), r2)
	wantCheckpoints(t, "r3's checkpoints", runCheckpoints(t, u.p, "r3"), nil)
	// A progress batch counts as neither rows nor audit rows.
	wantResult(t, write(t, u.w, sink.Batch{Progress: r2}), sink.Result{})
}

func testSealResume(t *testing.T, u progressUnderTest) {
	ctx := context.Background()
	wantCheckpoints(t, "nothing sealed", resumePoints(t, u.p), nil)
	first := []model.Checkpoint{cp("p1", "a.jsonl", 30, 3, model.NoWatermark, "r1"), cp("p0", "a.jsonl", 100, 10, 5_000, "r1")}
	if err := u.p.SealResume(ctx, first); err != nil {
		t.Fatal(err)
	}
	wantCheckpoints(t, "first seal", resumePoints(t, u.p), []model.Checkpoint{first[1], first[0]})

	// A later seal replaces its partitions' points and keeps the others.
	later := cp("p0", "b.jsonl", 40, 4, 9_000, "r2")
	if err := u.p.SealResume(ctx, []model.Checkpoint{later}); err != nil {
		t.Fatal(err)
	}
	want := []model.Checkpoint{later, first[0]}
	wantCheckpoints(t, "second seal", resumePoints(t, u.p), want)

	// Sealing the same points again stores nothing. The wait makes a
	// rewrite visible: sealed_at is stored to the millisecond.
	stored := u.resumeStored(t)
	time.Sleep(5 * time.Millisecond)
	if err := u.p.SealResume(ctx, want); err != nil {
		t.Fatal(err)
	}
	if again := u.resumeStored(t); again != stored {
		t.Fatalf("re-sealing the same points changed source_resume:\n%s\nthen\n%s", stored, again)
	}
	wantCheckpoints(t, "after re-sealing", resumePoints(t, u.p), want)

	// Going back to an earlier point is a replacement like any other.
	if err := u.p.SealResume(ctx, first[1:]); err != nil {
		t.Fatal(err)
	}
	wantCheckpoints(t, "after sealing p0's earlier point", resumePoints(t, u.p), []model.Checkpoint{first[1], first[0]})

	for _, bad := range [][]model.Checkpoint{
		{later, later},
		{cp("p2", "a.jsonl", 1, 1, 1, "")},
		{cp("", "a.jsonl", 1, 1, 1, "r2")},
	} {
		if err := u.p.SealResume(ctx, bad); err == nil {
			t.Errorf("SealResume(%+v) accepted", bad)
		}
	}
	wantCheckpoints(t, "after refused seals", resumePoints(t, u.p), []model.Checkpoint{first[1], first[0]})
}

func testPruneCheckpoints(t *testing.T, u progressUnderTest) {
	r1, r2 := twoRuns(t, u.w)
	if err := u.p.PruneCheckpoints(context.Background(), "r2"); err != nil {
		t.Fatal(err)
	}
	wantCheckpoints(t, "kept run's checkpoints", runCheckpoints(t, u.p, "r2"), r2)
	if u.prunes {
		r1 = nil
	}
	wantCheckpoints(t, "pruned run's checkpoints", runCheckpoints(t, u.p, "r1"), r1)
}

func testEarliestOpenWindow(t *testing.T, u progressUnderTest) {
	ctx := context.Background()
	earliest := func(what string, wantOK bool, want string) {
		t.Helper()
		got, ok, err := u.p.EarliestOpenWindow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok != wantOK || (ok && got != ms(want)) {
			t.Fatalf("%s: EarliestOpenWindow = %s, %v; want %s, %v", what, model.FormatTime(got), ok, want, wantOK)
		}
	}
	earliest("empty sink", false, "")
	write(t, u.w, sink.Batch{Rows: []model.Row{
		snap(t, "2026-11-04T07:00:00Z", "{}", 3, model.Final, 1, 1),
		snap(t, "2026-11-04T08:00:00Z", "{}", 2, model.Final, 1, 1),
		snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 1, model.OnTime, 1, 1),
		snap(t, "2026-11-04T09:00:00Z", "{}", 3, model.Final, 1, 1),
		snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.Early, 1, 1),
	}})
	earliest("one open key at 09:00", true, "2026-11-04T09:00:00Z")
	// Its earlier revisions were open; the current one is FINAL.
	write(t, u.w, sink.Batch{Rows: []model.Row{snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 2, model.Final, 1, 1)}})
	earliest("09:00 final", true, "2026-11-04T10:00:00Z")
	write(t, u.w, sink.Batch{Rows: []model.Row{snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Final, 1, 1)}})
	earliest("every row final", false, "")
}

// The checkpoint lines of the jsonl sink are the table contract's columns.
func TestJSONLCheckpointLine(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJSONL(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	write(t, j, sink.Batch{Progress: []model.Checkpoint{cp("p0", "a.jsonl", 100, 10, ms("2026-11-04T10:00:00Z"), "r1")}})
	data, err := os.ReadFile(filepath.Join(dir, FileCheckpoints))
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte(`{"partition":"p0","file":"a.jsonl","offset":100,"line":10,"max_valid":1793786400000,"run":"r1","updated_at":"`)
	if !bytes.HasPrefix(data, prefix) || bytes.Count(data, []byte("\n")) != 1 {
		t.Fatalf("source_checkpoints.jsonl = %s, want one line starting %s", data, prefix)
	}
}
