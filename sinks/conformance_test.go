package sinks

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// versioned is what the conformance tests need of a versioned sink: SQLite
// and BigQuery must both keep SPEC §4's revision rules and §5's tables.
type versioned interface {
	sink.Reader
	sink.ConfigChecker
	RunConfig(ctx context.Context) (map[string]string, error)
	WriteDiffs(ctx context.Context, diffs []sink.Diff) error
	Diffs(ctx context.Context) ([]sink.Diff, error)
}

// sinkUnderTest is a fresh, empty sink, its name as its errors spell it, and
// a way to count a table's rows.
type sinkUnderTest struct {
	s     versioned
	name  string
	count func(t *testing.T, table string) int64
}

// guardRules are the rules a sink that checks every write against its
// stored rows keeps (SQLite). The BigQuery sink reads nothing before a write:
// its view keeps them instead, which TestBigQueryViewIgnoresDeliveryOrder and
// TestBigQueryReplayChangesNoRead show.
var guardRules = []string{"RejectsLowerAndEqualRevisions", "OutOfOrderRevisions", "AppliesOneBatchInRevisionOrder", "ReplayIsNoOp", "NoDip"}

// conformance runs every shared rule, but those named in skip, against sinks
// made by open.
func conformance(t *testing.T, open func(t *testing.T) sinkUnderTest, skip ...string) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, u sinkUnderTest)
	}{
		{"RejectsLowerAndEqualRevisions", testRejectsLowerAndEqualRevisions},
		{"OutOfOrderRevisions", testOutOfOrderRevisions},
		{"AppliesOneBatchInRevisionOrder", testAppliesOneBatchInRevisionOrder},
		{"AuditRoundTrip", testAuditRoundTrip},
		{"ReplayIsNoOp", testReplayIsNoOp},
		{"NoDip", testNoDip},
		{"FinalHorizon", testFinalHorizon},
		{"CurrentRowsFrom", testCurrentRowsFrom},
		{"ChangelogFrom", testChangelogFrom},
		{"RunConfig", testRunConfig},
		{"Diffs", testDiffs},
		{"Tally", testTally},
	} {
		if slices.Contains(skip, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

func TestSQLiteConformance(t *testing.T) {
	conformance(t, func(t *testing.T) sinkUnderTest {
		path := filepath.Join(t.TempDir(), "revenue.db")
		s := openTestSQLite(t, path)
		return sinkUnderTest{s: s, name: path, count: func(t *testing.T, table string) int64 {
			return int64(countRows(t, s, table))
		}}
	})
}

func currentOf(t *testing.T, s sink.Reader) []model.Row {
	t.Helper()
	rows, err := s.CurrentRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func changelogOf(t *testing.T, s sink.Reader) []model.Row {
	t.Helper()
	rows, err := s.Changelog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func testRejectsLowerAndEqualRevisions(t *testing.T, u sinkUnderTest) {
	s := u.s
	r5 := snap(t, "2026-11-04T10:00:00Z", "{}", 5, model.Late, 3, 170_000_000)
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{r5}}), sink.Result{Accepted: 1})

	lower := snap(t, "2026-11-04T10:00:00Z", "{}", 4, model.Late, 9, 999_000_000)
	equal := snap(t, "2026-11-04T10:00:00Z", "{}", 5, model.Late, 9, 999_000_000)
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{lower}}), sink.Result{Stale: 1})
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{equal}}), sink.Result{Stale: 1})

	wantRows(t, "current", currentOf(t, s), withWriter([]model.Row{r5}, "stream"))
	wantRows(t, "changelog", changelogOf(t, s), withWriter([]model.Row{r5}, "stream"))
}

func testOutOfOrderRevisions(t *testing.T, u sinkUnderTest) {
	s := u.s
	rev := func(n int64) model.Row {
		return snap(t, "2026-11-04T10:00:00Z", "{}", n, model.Late, n, n*1_000_000)
	}
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{rev(3)}}), sink.Result{Accepted: 1})
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{rev(2)}}), sink.Result{Stale: 1})
	wantResult(t, write(t, s, sink.Batch{Rows: []model.Row{rev(4)}}), sink.Result{Accepted: 1})

	wantRows(t, "current", currentOf(t, s), withWriter([]model.Row{rev(4)}, "stream"))
	wantRows(t, "changelog", changelogOf(t, s), withWriter([]model.Row{rev(3), rev(4)}, "stream"))
}

func testAppliesOneBatchInRevisionOrder(t *testing.T, u sinkUnderTest) {
	s := u.s
	a := func(n int64) model.Row { return snap(t, "2026-11-04T10:00:00Z", "{}", n, model.Late, n, n) }
	b := func(n int64) model.Row { return snap(t, "2026-11-04T09:00:00Z", `{"c":"FR"}`, n, model.Late, n, n) }
	// Shuffled, two keys, and a duplicate of revision 3 for key a.
	res := write(t, s, sink.Batch{Rows: []model.Row{a(4), b(2), a(2), a(3), b(1), a(3)}})
	wantResult(t, res, sink.Result{Accepted: 5, Stale: 1})
	wantRows(t, "current", currentOf(t, s), withWriter([]model.Row{b(2), a(4)}, "stream"))
	wantRows(t, "changelog", changelogOf(t, s), withWriter([]model.Row{b(1), b(2), a(2), a(3), a(4)}, "stream"))
}

func auditBatch(t testing.TB) sink.Batch {
	return sink.Batch{
		TooLate: []model.TooLate{
			{Position: "p0/f.jsonl:4", EventID: "d1", EventTime: ms("2026-11-04T10:10:00Z"),
				Payload: []byte(`{"event_id":"d1","event_time":"2026-11-04T10:10:00Z","user_id":"u1","amount":"5"}`)},
			{Position: "p1/g.jsonl:9", EventID: "d2", EventTime: ms("2026-11-04T10:10:00.250Z"),
				Payload: []byte(`{"event_id":"d2"}`), Reason: model.ReasonWindowClosed},
		},
		Conflicts: []model.Conflict{{Position: "p0/f.jsonl:5", EventID: "a1",
			FirstFingerprint: 0x0123456789abcdef, ConflictingFingerprint: 0xfedcba9876543210,
			Payload: []byte(`{"event_id":"a1","amount":"120"}`)}},
		Quarantined: []model.Quarantined{{Position: "p0/f.jsonl:7", Payload: []byte(`{not json`),
			Reason: model.ReasonMalformedJSON, Detail: "invalid character 'n'"}},
	}
}

func testAuditRoundTrip(t *testing.T, u sinkUnderTest) {
	s := u.s
	b := auditBatch(t)
	// A copy of a position inside the batch is stored once.
	b.Quarantined = append(b.Quarantined, b.Quarantined[0])
	wantResult(t, write(t, s, b), sink.Result{AuditInserted: 4})
	ctx := context.Background()

	tl, err := s.TooLate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantTL := append([]model.TooLate(nil), b.TooLate...)
	wantTL[0].Reason = model.ReasonWindowClosed // defaulted
	if !reflect.DeepEqual(tl, wantTL) {
		t.Errorf("too_late = %+v\nwant %+v", tl, wantTL)
	}
	cf, err := s.Conflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf, b.Conflicts) {
		t.Errorf("conflicts = %+v\nwant %+v", cf, b.Conflicts)
	}
	q, err := s.Quarantined(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Detail is not stored (SPEC §5 has no column for it).
	wantQ := []model.Quarantined{{Position: "p0/f.jsonl:7", Payload: []byte(`{not json`), Reason: model.ReasonMalformedJSON}}
	if !reflect.DeepEqual(q, wantQ) {
		t.Errorf("quarantined = %+v\nwant %+v", q, wantQ)
	}
}

func testReplayIsNoOp(t *testing.T, u sinkUnderTest) {
	s := u.s
	b := auditBatch(t)
	b.Rows = []model.Row{
		snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
		snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
		snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.OnTime, 1, 20_000_000),
	}
	b.Progress = []model.Checkpoint{{Partition: "p0", File: "f.jsonl", Offset: 70, Line: 7, MaxValid: model.NoWatermark}}
	wantResult(t, write(t, s, b), sink.Result{Accepted: 3, AuditInserted: 4})
	cur, log := currentOf(t, s), changelogOf(t, s)

	wantResult(t, write(t, s, b), sink.Result{Stale: 3})
	wantRows(t, "current after replay", currentOf(t, s), cur)
	wantRows(t, "changelog after replay", changelogOf(t, s), log)
	for table, n := range map[string]int64{"hourly_revenue_changelog": 3, "too_late_events": 2, "conflict_events": 1, "quarantined_events": 1} {
		if got := u.count(t, table); got != n {
			t.Errorf("%s has %d rows after replay, want %d", table, got, n)
		}
	}
}

func testNoDip(t *testing.T, u sinkUnderTest) {
	s := u.s
	at := func(rev int64, state model.ResultState, count int64) model.Row {
		return snap(t, "2026-11-04T10:00:00Z", "{}", rev, state, count, count*10_000_000)
	}
	steps := []struct {
		name string
		row  model.Row
		want sink.Result
	}{
		{"first LATE", at(5, model.Late, 3), sink.Result{Accepted: 1}},
		{"stream state goes back", at(6, model.OnTime, 4), sink.Result{Stale: 1}},
		{"stream count falls", at(6, model.Late, 2), sink.Result{Stale: 1}},
		{"stream FINAL", at(6, model.Final, 3), sink.Result{Accepted: 1}},
		{"FINAL stays FINAL", at(7, model.Late, 3), sink.Result{Stale: 1}},
		{"reconcile lowers the count", reconcileRow(at(7, model.Final, 2)), sink.Result{Accepted: 1}},
		{"reconcile cannot un-final", reconcileRow(at(8, model.Late, 2)), sink.Result{Stale: 1}},
		{"stream equal count after reconcile", at(8, model.Final, 2), sink.Result{Accepted: 1}},
	}
	for _, st := range steps {
		res, err := s.Write(context.Background(), sink.Batch{Rows: []model.Row{st.row}})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if res != st.want {
			t.Fatalf("%s: result = %+v, want %+v", st.name, res, st.want)
		}
	}
	want := []model.Row{at(5, model.Late, 3), at(6, model.Final, 3), reconcileRow(at(7, model.Final, 2)), at(8, model.Final, 2)}
	wantRows(t, "changelog", changelogOf(t, s), withWriter(want, "stream"))
	// Along the changelog, state never goes back and the count only falls at
	// the reconcile row.
	log := changelogOf(t, s)
	for i := 1; i < len(log); i++ {
		if log[i].State < log[i-1].State {
			t.Errorf("state went back at revision %d", log[i].Revision)
		}
		if log[i].EventCount < log[i-1].EventCount && !isReconcile(log[i]) {
			t.Errorf("count fell at stream revision %d", log[i].Revision)
		}
	}
}

func testFinalHorizon(t *testing.T, u sinkUnderTest) {
	s := u.s
	ctx := context.Background()
	if _, ok, err := s.FinalHorizon(ctx); err != nil || ok {
		t.Fatalf("empty sink: ok=%v err=%v", ok, err)
	}
	write(t, s, sink.Batch{Rows: []model.Row{
		snap(t, "2026-11-04T08:00:00Z", "{}", 3, model.Final, 1, 1),
		snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 3, model.Final, 1, 1),
		snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 1, 1),
		// A sub-second window end, which TEXT order would misplace.
		{WindowStart: ms("2026-11-04T09:00:00Z"), WindowEnd: ms("2026-11-04T10:00:00.500Z"), Dims: "{}", Revision: 1, State: model.Final},
	}})
	end, ok, err := s.FinalHorizon(ctx)
	if err != nil || !ok || end != ms("2026-11-04T10:00:00.500Z") {
		t.Fatalf("FinalHorizon = %s, %v, %v; want 2026-11-04T10:00:00.500Z", model.FormatTime(end), ok, err)
	}
}

func testRunConfig(t *testing.T, u sinkUnderTest) {
	s := u.s
	ctx := context.Background()
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": ""}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "", "allowed_lateness": "24h"}); err != nil {
		t.Fatalf("same settings plus a new key: %v", err)
	}
	err := s.CheckRunConfig(ctx, map[string]string{"window": "30m", "dimensions": ""})
	want := "sink " + u.name + " was written with window=1h; this run has window=30m: its window_start keys would collide; use another sink"
	if err == nil || err.Error() != want {
		t.Fatalf("different window: err = %v\nwant %s", err, want)
	}
	cfg, err := s.RunConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wantCfg := map[string]string{"window": "1h", "dimensions": "", "allowed_lateness": "24h"}; !reflect.DeepEqual(cfg, wantCfg) {
		t.Fatalf("run_config = %v, want %v", cfg, wantCfg)
	}
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "country"}); err == nil {
		t.Fatal("different dimensions accepted by a later run")
	}
}

func testDiffs(t *testing.T, u sinkUnderTest) {
	s := u.s
	ctx := context.Background()
	rev := int64(7)
	diffs := []sink.Diff{
		{RunID: "r1", WindowStart: ms("2026-11-04T10:00:00Z"), Dims: "{}", StreamedRevenueMicros: 170, RecomputedRevenueMicros: 175,
			DeltaMicros: 5, StreamedCount: 3, RecomputedCount: 4, Classification: "too_late"},
		{RunID: "r1", WindowStart: ms("2026-11-04T11:00:00Z"), Dims: "{}", RecomputedRevenueMicros: 9, DeltaMicros: 9,
			RecomputedCount: 1, Classification: "missing_window", AppliedRevision: &rev},
	}
	if err := s.WriteDiffs(ctx, diffs); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDiffs(ctx, diffs); err != nil { // a retried run
		t.Fatal(err)
	}
	// --apply rewrites a run's diffs with the revisions it wrote.
	applied := int64(3)
	diffs[0].AppliedRevision = &applied
	if err := s.WriteDiffs(ctx, diffs[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Diffs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, diffs) {
		t.Fatalf("diffs = %+v\nwant %+v", got, diffs)
	}
	if n := u.count(t, "reconcile_diffs"); n != 2 {
		t.Fatalf("reconcile_diffs has %d rows, want 2", n)
	}
}
