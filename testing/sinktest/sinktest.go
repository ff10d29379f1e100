// Package sinktest holds what the sink backends' tests share: row helpers
// and the conformance suites every backend runs (SPEC §4's revision rules,
// §5's tables, the progress tables, the live page's reads), each called
// from the backend's own tests with a fresh sink.
package sinktest

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

// ms parses an RFC 3339 time into epoch milliseconds.
var MS = rowtest.MS

const Hour = int64(time.Hour / time.Millisecond)

// snap builds a snapshot row for the window starting at start.
func Snap(t testing.TB, start, dims string, rev int64, state model.ResultState, count, micros int64) model.Row {
	ws := MS(start)
	return model.Row{WindowStart: ws, WindowEnd: ws + Hour, Dims: dims, RevenueMicros: micros,
		EventCount: count, Revision: rev, State: state}
}

func ReconcileRow(r model.Row) model.Row { r.Writer = "reconcile:run1"; return r }

func Write(t testing.TB, s sink.Sink, b sink.Batch) sink.Result {
	t.Helper()
	res, err := s.Write(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func WantResult(t *testing.T, got, want sink.Result) {
	t.Helper()
	if got != want {
		t.Fatalf("result = %+v, want %+v", got, want)
	}
}

func WithWriter(rows []model.Row, w string) []model.Row {
	out := append([]model.Row(nil), rows...)
	for i := range out {
		if out[i].Writer == "" {
			out[i].Writer = w
		}
	}
	return out
}

func WantRows(t *testing.T, what string, got, want []model.Row) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// versioned is what the conformance tests need of a versioned sink: SQLite
// and BigQuery must both keep SPEC §4's revision rules and §5's tables.
type Versioned interface {
	sink.Reader
	sink.ConfigChecker
	RunConfig(ctx context.Context) (map[string]string, error)
	WriteDiffs(ctx context.Context, diffs []sink.Diff) error
	Diffs(ctx context.Context) ([]sink.Diff, error)
}

// sinkUnderTest is a fresh, empty sink, its name as its errors spell it, and
// a way to count a table's rows.
type Under struct {
	S     Versioned
	Name  string
	Count func(t *testing.T, table string) int64
}

// guardRules are the rules a sink that checks every write against its
// stored rows keeps (SQLite). The BigQuery sink reads nothing before a write:
// its view keeps them instead, which TestBigQueryViewIgnoresDeliveryOrder and
// TestBigQueryReplayChangesNoRead show.
var GuardRules = []string{"RejectsLowerAndEqualRevisions", "OutOfOrderRevisions", "AppliesOneBatchInRevisionOrder", "ReplayIsNoOp", "NoDip"}

// conformance runs every shared rule, but those named in skip, against sinks
// made by open.
func Conformance(t *testing.T, open func(t *testing.T) Under, skip ...string) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, u Under)
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
		{"RunConfigDimensionOrder", testRunConfigDimensionOrder},
		{"Diffs", testDiffs},
		{"Tally", testTally},
	} {
		if slices.Contains(skip, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

func CurrentOf(t *testing.T, s sink.Reader) []model.Row {
	t.Helper()
	rows, err := sink.Rows(s.Changelog(context.Background(), sink.Query{Current: true}))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func ChangelogOf(t *testing.T, s sink.Reader) []model.Row {
	t.Helper()
	rows, err := sink.Rows(s.Changelog(context.Background(), sink.Query{}))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func testRejectsLowerAndEqualRevisions(t *testing.T, u Under) {
	s := u.S
	r5 := Snap(t, "2026-11-04T10:00:00Z", "{}", 5, model.Late, 3, 170_000_000)
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{r5}}), sink.Result{Accepted: 1})

	lower := Snap(t, "2026-11-04T10:00:00Z", "{}", 4, model.Late, 9, 999_000_000)
	equal := Snap(t, "2026-11-04T10:00:00Z", "{}", 5, model.Late, 9, 999_000_000)
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{lower}}), sink.Result{Stale: 1})
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{equal}}), sink.Result{Stale: 1})

	WantRows(t, "current", CurrentOf(t, s), WithWriter([]model.Row{r5}, "stream"))
	WantRows(t, "changelog", ChangelogOf(t, s), WithWriter([]model.Row{r5}, "stream"))
}

func testOutOfOrderRevisions(t *testing.T, u Under) {
	s := u.S
	rev := func(n int64) model.Row {
		return Snap(t, "2026-11-04T10:00:00Z", "{}", n, model.Late, n, n*1_000_000)
	}
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{rev(3)}}), sink.Result{Accepted: 1})
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{rev(2)}}), sink.Result{Stale: 1})
	WantResult(t, Write(t, s, sink.Batch{Rows: []model.Row{rev(4)}}), sink.Result{Accepted: 1})

	WantRows(t, "current", CurrentOf(t, s), WithWriter([]model.Row{rev(4)}, "stream"))
	WantRows(t, "changelog", ChangelogOf(t, s), WithWriter([]model.Row{rev(3), rev(4)}, "stream"))
}

func testAppliesOneBatchInRevisionOrder(t *testing.T, u Under) {
	s := u.S
	a := func(n int64) model.Row { return Snap(t, "2026-11-04T10:00:00Z", "{}", n, model.Late, n, n) }
	b := func(n int64) model.Row { return Snap(t, "2026-11-04T09:00:00Z", `{"c":"FR"}`, n, model.Late, n, n) }
	// Shuffled, two keys, and a duplicate of revision 3 for key a.
	res := Write(t, s, sink.Batch{Rows: []model.Row{a(4), b(2), a(2), a(3), b(1), a(3)}})
	WantResult(t, res, sink.Result{Accepted: 5, Stale: 1})
	WantRows(t, "current", CurrentOf(t, s), WithWriter([]model.Row{b(2), a(4)}, "stream"))
	WantRows(t, "changelog", ChangelogOf(t, s), WithWriter([]model.Row{b(1), b(2), a(2), a(3), a(4)}, "stream"))
}

func AuditBatch(t testing.TB) sink.Batch {
	return sink.Batch{Audit: sink.Audit{
		TooLate: []model.TooLate{
			{Position: "p0/f.jsonl:4", EventID: "d1", EventTime: MS("2026-11-04T10:10:00Z"),
				Payload: []byte(`{"event_id":"d1","event_time":"2026-11-04T10:10:00Z","user_id":"u1","amount":"5"}`)},
			{Position: "p1/g.jsonl:9", EventID: "d2", EventTime: MS("2026-11-04T10:10:00.250Z"),
				Payload: []byte(`{"event_id":"d2"}`), Reason: model.ReasonWindowClosed},
		},
		Conflicts: []model.Conflict{{Position: "p0/f.jsonl:5", EventID: "a1",
			FirstFingerprint: 0x0123456789abcdef, ConflictingFingerprint: 0xfedcba9876543210,
			Payload: []byte(`{"event_id":"a1","amount":"120"}`)}},
		Quarantined: []model.Quarantined{{Position: "p0/f.jsonl:7", Payload: []byte(`{not json`),
			Reason: model.ReasonMalformedJSON, Detail: "invalid character 'n'"}},
	}}
}

func testAuditRoundTrip(t *testing.T, u Under) {
	s := u.S
	b := AuditBatch(t)
	// A copy of a position inside the batch is stored once.
	b.Quarantined = append(b.Quarantined, b.Quarantined[0])
	WantResult(t, Write(t, s, b), sink.Result{AuditInserted: 4})
	ctx := context.Background()

	a, err := s.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tl, cf, q := a.TooLate, a.Conflicts, a.Quarantined
	wantTL := append([]model.TooLate(nil), b.TooLate...)
	wantTL[0].Reason = model.ReasonWindowClosed // defaulted
	if !reflect.DeepEqual(tl, wantTL) {
		t.Errorf("too_late = %+v\nwant %+v", tl, wantTL)
	}
	if !reflect.DeepEqual(cf, b.Conflicts) {
		t.Errorf("conflicts = %+v\nwant %+v", cf, b.Conflicts)
	}
	// Detail is not stored (SPEC §5 has no column for it).
	wantQ := []model.Quarantined{{Position: "p0/f.jsonl:7", Payload: []byte(`{not json`), Reason: model.ReasonMalformedJSON}}
	if !reflect.DeepEqual(q, wantQ) {
		t.Errorf("quarantined = %+v\nwant %+v", q, wantQ)
	}
}

func testReplayIsNoOp(t *testing.T, u Under) {
	s := u.S
	b := AuditBatch(t)
	b.Rows = []model.Row{
		Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
		Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
		Snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.OnTime, 1, 20_000_000),
	}
	b.Progress = []model.Checkpoint{{Partition: "p0", File: "f.jsonl", Offset: 70, Line: 7, MaxValid: model.NoWatermark}}
	WantResult(t, Write(t, s, b), sink.Result{Accepted: 3, AuditInserted: 4})
	cur, log := CurrentOf(t, s), ChangelogOf(t, s)

	WantResult(t, Write(t, s, b), sink.Result{Stale: 3})
	WantRows(t, "current after replay", CurrentOf(t, s), cur)
	WantRows(t, "changelog after replay", ChangelogOf(t, s), log)
	for table, n := range map[string]int64{"hourly_revenue_changelog": 3, "too_late_events": 2, "conflict_events": 1, "quarantined_events": 1} {
		if got := u.Count(t, table); got != n {
			t.Errorf("%s has %d rows after replay, want %d", table, got, n)
		}
	}
}

func testNoDip(t *testing.T, u Under) {
	s := u.S
	at := func(rev int64, state model.ResultState, count int64) model.Row {
		return Snap(t, "2026-11-04T10:00:00Z", "{}", rev, state, count, count*10_000_000)
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
		{"reconcile lowers the count", ReconcileRow(at(7, model.Final, 2)), sink.Result{Accepted: 1}},
		{"reconcile cannot un-final", ReconcileRow(at(8, model.Late, 2)), sink.Result{Stale: 1}},
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
	want := []model.Row{at(5, model.Late, 3), at(6, model.Final, 3), ReconcileRow(at(7, model.Final, 2)), at(8, model.Final, 2)}
	WantRows(t, "changelog", ChangelogOf(t, s), WithWriter(want, "stream"))
	// Along the changelog, state never goes back and the count only falls at
	// the reconcile row.
	log := ChangelogOf(t, s)
	for i := 1; i < len(log); i++ {
		if log[i].State < log[i-1].State {
			t.Errorf("state went back at revision %d", log[i].Revision)
		}
		if log[i].EventCount < log[i-1].EventCount && !log[i].ByReconcile() {
			t.Errorf("count fell at stream revision %d", log[i].Revision)
		}
	}
}

func testFinalHorizon(t *testing.T, u Under) {
	s := u.S
	ctx := context.Background()
	if _, ok, err := s.FinalHorizon(ctx); err != nil || ok {
		t.Fatalf("empty sink: ok=%v err=%v", ok, err)
	}
	Write(t, s, sink.Batch{Rows: []model.Row{
		Snap(t, "2026-11-04T08:00:00Z", "{}", 3, model.Final, 1, 1),
		Snap(t, "2026-11-04T09:00:00Z", `{"c":"DE"}`, 3, model.Final, 1, 1),
		Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 1, 1),
		// A sub-second window end, which TEXT order would misplace.
		{WindowStart: MS("2026-11-04T09:00:00Z"), WindowEnd: MS("2026-11-04T10:00:00.500Z"), Dims: "{}", Revision: 1, State: model.Final},
	}})
	end, ok, err := s.FinalHorizon(ctx)
	if err != nil || !ok || end != MS("2026-11-04T10:00:00.500Z") {
		t.Fatalf("FinalHorizon = %s, %v, %v; want 2026-11-04T10:00:00.500Z", model.FormatTime(end), ok, err)
	}
}

func testRunConfig(t *testing.T, u Under) {
	s := u.S
	ctx := context.Background()
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": ""}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "", "allowed_lateness": "24h"}); err != nil {
		t.Fatalf("same settings plus a new key: %v", err)
	}
	err := s.CheckRunConfig(ctx, map[string]string{"window": "30m", "dimensions": ""})
	want := "sink " + u.Name + " was written with window=1h; this run has window=30m: its window_start keys would collide; use another sink"
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

// testRunConfigDimensionOrder: dims are canonical (sorted keys), so the same
// dimensions in another order make the same keys and are accepted; another
// set is still refused (testRunConfig).
func testRunConfigDimensionOrder(t *testing.T, u Under) {
	s := u.S
	ctx := context.Background()
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "platform,country"}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "country,platform"}); err != nil {
		t.Fatalf("the same dimensions in another order: %v", err)
	}
	err := s.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "country,device"})
	want := "sink " + u.Name + " was written with dimensions=platform,country; this run has dimensions=country,device: its window_start keys would collide; use another sink"
	if err == nil || err.Error() != want {
		t.Fatalf("other dimensions: err = %v\nwant %s", err, want)
	}
}

func testDiffs(t *testing.T, u Under) {
	s := u.S
	ctx := context.Background()
	rev := int64(7)
	diffs := []sink.Diff{
		{RunID: "r1", WindowStart: MS("2026-11-04T10:00:00Z"), Dims: "{}", StreamedRevenueMicros: 170, RecomputedRevenueMicros: 175,
			DeltaMicros: 5, StreamedCount: 3, RecomputedCount: 4, Classification: "too_late"},
		{RunID: "r1", WindowStart: MS("2026-11-04T11:00:00Z"), Dims: "{}", RecomputedRevenueMicros: 9, DeltaMicros: 9,
			RecomputedCount: 1, Classification: "missing_window", AppliedRevision: &rev},
		// Never applied: applied_revision stays NULL and reads back nil.
		{RunID: "r1", WindowStart: MS("2026-11-04T12:00:00Z"), Dims: "{}", StreamedRevenueMicros: 4, DeltaMicros: -4,
			StreamedCount: 1, Classification: "unexplained"},
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
	if n := u.Count(t, "reconcile_diffs"); n != 3 {
		t.Fatalf("reconcile_diffs has %d rows, want 3", n)
	}
}

// testCurrentRowsFrom: a sink reads back only the current rows of windows
// starting at or after the bound, FINAL or not (the restart seed's read).
func testCurrentRowsFrom(t *testing.T, u Under) {
	from := func(ms int64) ([]model.Row, error) {
		return sink.Rows(u.S.Changelog(context.Background(), sink.Query{Current: true, From: &ms}))
	}
	old := Snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	edge := Snap(t, "2026-11-04T09:00:00Z", "{}", 2, model.Final, 2, 200)
	open := Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 100)
	Write(t, u.S, sink.Batch{Rows: []model.Row{old, edge, open}})

	got, err := from(MS("2026-11-04T09:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "current rows from 09:00", got, WithWriter([]model.Row{edge, open}, "stream"))
	got, err = from(MS("2026-11-04T09:00:00.001Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "current rows from 09:00:00.001", got, WithWriter([]model.Row{open}, "stream"))
	got, err = from(MS("2026-11-05T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "current rows from a later day", got, nil)
}

// testChangelogFrom: a sink reads back every revision of the windows
// starting at or after the bound, and only those, and counts every key it
// holds (the live views' refresh).
func testChangelogFrom(t *testing.T, u Under) {
	r, ok := u.S.(sink.RecentReader)
	if !ok {
		t.Fatalf("%s cannot read the changelog from a window_start", u.Name)
	}
	ctx := context.Background()
	from := func(ms int64) ([]model.Row, error) { return sink.Rows(u.S.Changelog(ctx, sink.Query{From: &ms})) }
	old := Snap(t, "2026-11-01T08:00:00Z", "{}", 3, model.Final, 4, 400)
	edge1 := Snap(t, "2026-11-04T09:00:00Z", `{"shop":"a"}`, 1, model.OnTime, 1, 100)
	edge2 := Snap(t, "2026-11-04T09:00:00Z", `{"shop":"a"}`, 2, model.Late, 2, 250)
	other := Snap(t, "2026-11-04T09:00:00Z", `{"shop":"b"}`, 1, model.OnTime, 1, 30)
	open := Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.Early, 1, 100)
	Write(t, u.S, sink.Batch{Rows: []model.Row{old, edge1, other, open}})
	Write(t, u.S, sink.Batch{Rows: []model.Row{edge2}})

	got, err := from(MS("2026-11-04T09:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "changelog from 09:00", got, WithWriter([]model.Row{edge1, edge2, other, open}, "stream"))
	got, err = from(MS("2026-11-04T09:00:00.001Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "changelog from 09:00:00.001", got, WithWriter([]model.Row{open}, "stream"))
	got, err = from(MS("2026-11-05T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	WantRows(t, "changelog from a later day", got, nil)
	if n, err := r.KeyCount(ctx); err != nil || n != 4 {
		t.Fatalf("KeyCount = %d, %v; want 4", n, err)
	}
}

// testTally: the counts a sink gives are what reading every table back and
// counting would give (one row per revision and per source position, however
// often a batch was delivered), and Latest is the tail of CurrentRows, with
// window bounds in milliseconds that sort otherwise as TEXT.
func testTally(t *testing.T, u Under) {
	tallyAgreesWithReads(t, u.S, func() {
		b := AuditBatch(t)
		b.Rows = []model.Row{
			Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
			Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
			Snap(t, "2026-11-04T10:00:00Z", `{"shop":"a"}`, 1, model.Final, 1, 5),
			Snap(t, "2026-11-04T10:00:00.500Z", "{}", 1, model.Early, 1, 7),
			Snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.OnTime, 1, 20_000_000),
			Snap(t, "2026-11-04T09:00:00Z", "{}", 3, model.Final, 4, 400),
		}
		Write(t, u.S, b)
		Write(t, u.S, b) // a replayed delivery: BigQuery appends the audit rows again
	})
}

func tallyAgreesWithReads(t *testing.T, s sink.Reader, fill func()) {
	t.Helper()
	ctx := context.Background()
	empty, err := s.Tally(ctx, 3)
	if err != nil || empty.Keys() != 0 || empty.Changelog != 0 || empty.TooLate+empty.Conflicts+empty.Quarantined != 0 || len(empty.Latest) != 0 {
		t.Fatalf("tally of an empty sink = %+v, %v", empty, err)
	}
	fill()
	current := CurrentOf(t, s)
	byState := map[model.ResultState]int64{}
	for _, r := range current {
		byState[r.State]++
	}
	a, _ := s.Audit(ctx)
	late, conflicts, quarantined := a.TooLate, a.Conflicts, a.Quarantined
	for _, latest := range []int{0, 1, 2, 3, len(current), len(current) + 5} {
		got, err := s.Tally(ctx, latest)
		if err != nil {
			t.Fatal(err)
		}
		if got.Keys() != int64(len(current)) || len(got.Current) != len(byState) {
			t.Errorf("tally counts current %v, want %v", got.Current, byState)
		}
		for st, n := range byState {
			if got.Current[st] != n {
				t.Errorf("tally counts %d %s rows, want %d", got.Current[st], st, n)
			}
		}
		if want := int64(len(ChangelogOf(t, s))); got.Changelog != want {
			t.Errorf("tally counts %d revisions, want %d", got.Changelog, want)
		}
		if got.TooLate != int64(len(late)) || got.Conflicts != int64(len(conflicts)) || got.Quarantined != int64(len(quarantined)) {
			t.Errorf("tally counts audit %d/%d/%d, want %d/%d/%d", got.TooLate, got.Conflicts, got.Quarantined, len(late), len(conflicts), len(quarantined))
		}
		WantRows(t, "latest rows", got.Latest, current[max(0, len(current)-latest):])
	}
}

// T10 is 2026-11-04T10:00:00Z in epoch milliseconds.
var T10 = MS("2026-11-04T10:00:00Z")

// Snapshot is a "{}" row of the hour from start with revenue whole units.
func Snapshot(start int64, revenue, count, rev int64, st model.ResultState) model.Row {
	return model.Row{WindowStart: start, WindowEnd: start + Hour, Dims: "{}", RevenueMicros: revenue * 1_000_000,
		EventCount: count, Revision: rev, State: st}
}

// Counters sums the write path's counters across steps.
func Counters(pr beam.PipelineResult) map[metrics.Name]int64 {
	out := map[metrics.Name]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Namespace() == metrics.Namespace && strings.HasPrefix(c.Name(), "sink_") {
			out[metrics.Name(c.Name())] += c.Result()
		}
	}
	return out
}
