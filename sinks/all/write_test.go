package all_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	_ "github.com/revenue-stream/hourly/sinks/all"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/runnertest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// The write verbs against each backend, on prism.

// TestMain runs the write path tests on prism (ptest's default runner); the
// plain-Go sink tests of this package do not notice.
func TestMain(m *testing.M) {
	os.Exit(ptest.MainRet(m))
}

// runWrite writes the four streams to spec on prism and returns the write
// path's counters.
func runWrite(t *testing.T, spec sink.Spec, rows []model.Row, late []model.TooLate, conflicts []model.Conflict, quarantined []model.Quarantined) map[metrics.Name]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	sink.Write(s, spec, sink.DefaultFlushPolicy,
		beam.CreateList(s, rows), beam.CreateList(s, late),
		beam.CreateList(s, conflicts), beam.CreateList(s, quarantined))
	pr, err := runnertest.Run(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// Prism's loopback worker keeps its DoFns (and their handles) until the
	// process ends; release them as the launcher does.
	if err := sink.CloseShared(); err != nil {
		t.Fatal(err)
	}
	return sinktest.Counters(pr)
}

func TestWriteOnPrism(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revenue.db")
	spec := sink.Spec{Scheme: sink.SchemeSQLite, Path: path}
	// Out of order on purpose: the sink keeps the highest revision whatever
	// order the bundles arrive in.
	rows := []model.Row{
		sinktest.Snapshot(sinktest.T10, 170, 3, 3, model.Final),
		sinktest.Snapshot(sinktest.T10, 150, 2, 1, model.OnTime),
		sinktest.Snapshot(sinktest.T10, 170, 3, 2, model.Late),
		sinktest.Snapshot(sinktest.T10+sinktest.Hour, 1, 1, 1, model.OnTime),
	}
	late := []model.TooLate{{Position: "p0/a.jsonl:8", EventID: "D", EventTime: sinktest.T10 + 600_000, Payload: []byte(`{"event_id":"D"}`)}}
	conflicts := []model.Conflict{{Position: "p0/a.jsonl:6", EventID: "A", FirstFingerprint: 1, ConflictingFingerprint: 2, Payload: []byte(`{"event_id":"A"}`)}}
	quarantined := []model.Quarantined{{Position: "p0/a.jsonl:9", Payload: []byte("{"), Reason: model.ReasonMalformedJSON}}

	got := runWrite(t, spec, rows, late, conflicts, quarantined)
	// Whatever the bundling, each snapshot is accepted or stale exactly once,
	// and the final state is the same.
	if got[metrics.SinkRowsAccepted]+got[metrics.SinkRowsStale] != int64(len(rows)) || got[metrics.SinkRowsAccepted] < 2 {
		t.Errorf("first run counters = %v, want accepted+stale = %d, accepted >= 2", got, len(rows))
	}
	if got[metrics.SinkAuditInserted] != 3 || got[metrics.SinkRetries] != 0 {
		t.Errorf("first run counters = %v, want 3 audit rows inserted, no retries", got)
	}

	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	current, err := sinktest.CurrentRows(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Row{sinktest.Snapshot(sinktest.T10, 170, 3, 3, model.Final), sinktest.Snapshot(sinktest.T10+sinktest.Hour, 1, 1, 1, model.OnTime)}
	for i := range want {
		want[i].Writer = "stream"
	}
	if !slices.Equal(current, want) {
		t.Errorf("hourly_revenue = %+v\nwant %+v", current, want)
	}
	if tl, err := sinktest.TooLate(ctx, db); err != nil || len(tl) != 1 || tl[0].Reason != model.ReasonWindowClosed {
		t.Errorf("too_late_events = %+v, %v; want D with reason window_closed", tl, err)
	}
	if cf, err := sinktest.Conflicts(ctx, db); err != nil || len(cf) != 1 || cf[0].EventID != "A" {
		t.Errorf("conflict_events = %+v, %v; want A", cf, err)
	}
	if q, err := sinktest.Quarantined(ctx, db); err != nil || len(q) != 1 || q[0].Reason != model.ReasonMalformedJSON {
		t.Errorf("quarantined_events = %+v, %v; want one malformed_json", q, err)
	}
	changelog, err := sinktest.ChangelogRows(ctx, db)
	if err != nil {
		t.Fatal(err)
	}

	// The same output again (a replay) changes nothing.
	got = runWrite(t, spec, rows, late, conflicts, quarantined)
	if got[metrics.SinkRowsAccepted] != 0 || got[metrics.SinkRowsStale] != int64(len(rows)) || got[metrics.SinkAuditInserted] != 0 {
		t.Errorf("replay counters = %v, want every row stale and no audit row inserted", got)
	}
	again, err := sinktest.ChangelogRows(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(changelog) {
		t.Errorf("replay added changelog rows: %d, then %d", len(changelog), len(again))
	}
	if sink.LastWrite().IsZero() {
		t.Error("LastWrite is zero after writes in this process")
	}
}

func TestSharedHandles(t *testing.T) {
	spec := sink.Spec{Scheme: sink.SchemeJSONL, Path: t.TempDir()}
	ctx := context.Background()
	a, err := sink.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sink.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two DoFns on one spec got different handles: their revision guards would disagree")
	}
	if err := sink.Release(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, sink.Batch{Rows: []model.Row{sinktest.Snapshot(sinktest.T10, 1, 1, 1, model.OnTime)}}); err != nil {
		t.Fatalf("handle closed while still referenced: %v", err)
	}
	if err := sink.Release(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, sink.Batch{Rows: []model.Row{sinktest.Snapshot(sinktest.T10, 1, 1, 2, model.Late)}}); err == nil {
		t.Error("handle still open after its last release")
	}
}

// WriteProgress on prism stores each checkpoint once, stamped with the
// run, and adds to none of the rows and audit counters, for the sinks the
// launcher reads progress from.
func TestWriteProgressOnPrism(t *testing.T) {
	dir := t.TempDir()
	in := []model.Checkpoint{
		{Partition: "p1", File: "a.jsonl", Offset: 30, Line: 3, MaxValid: model.NoWatermark},
		{Partition: "p0", File: "a.jsonl", Offset: 100, Line: 10, MaxValid: sinktest.T10},
		{Partition: "p0", File: "b.jsonl", Offset: 40, Line: 4, MaxValid: sinktest.T10 + sinktest.Hour},
		{Partition: "p0", File: "b.jsonl", Offset: 40, Line: 4, MaxValid: sinktest.T10 + sinktest.Hour}, // sent again
	}
	for _, spec := range []sink.Spec{{Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "revenue.db")}, {Scheme: sink.SchemeJSONL, Path: filepath.Join(dir, "out")},
		{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "progress"}} {
		t.Run(spec.Scheme, func(t *testing.T) {
			if spec.Scheme == sink.SchemeBigQuery {
				bqtest.Start(t) // prism's loopback workers share the test's environment
			}
			p, s := beam.NewPipelineWithRoot()
			sink.WriteProgress(s, spec, sink.DefaultFlushPolicy, "run-7", beam.CreateList(s, in))
			pr, err := runnertest.Run(p)
			if err != nil {
				t.Fatalf("pipeline failed: %v", err)
			}
			if err := sink.CloseShared(); err != nil {
				t.Fatal(err)
			}
			if got := sinktest.Counters(pr); got[metrics.SinkRowsAccepted]+got[metrics.SinkRowsStale]+got[metrics.SinkAuditInserted] != 0 {
				t.Errorf("checkpoint writes moved the rows or audit counters: %v", got)
			}
			store, ok, err := sink.OpenProgress(context.Background(), spec)
			if err != nil || !ok {
				t.Fatalf("OpenProgress = %v, %v", ok, err)
			}
			defer store.Close()
			got, err := store.RunCheckpoints(context.Background(), "run-7")
			if err != nil {
				t.Fatal(err)
			}
			want := []model.Checkpoint{in[1], in[2], in[0]}
			for i := range want {
				want[i].Run = "run-7"
			}
			if !slices.Equal(got, want) {
				t.Errorf("run-7's checkpoints = %+v\nwant %+v", got, want)
			}
			if other, err := store.RunCheckpoints(context.Background(), ""); err != nil || len(other) != 0 {
				t.Errorf("checkpoints without a run = %+v, %v; want none", other, err)
			}
		})
	}
}

// A sink that keeps no progress gets no progress step.
func TestWriteProgressSkipsConsole(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	sink.WriteProgress(s, sink.Spec{Scheme: sink.SchemeConsole}, sink.DefaultFlushPolicy, "run-7", beam.CreateList(s, []model.Checkpoint{{Partition: "p0"}}))
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edges {
		if e.DoFn != nil && strings.Contains(e.DoFn.Name(), "progressFn") {
			t.Fatal("a progress step was wired for the console sink")
		}
	}
}
