package sinks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
)

// TestMain runs the write path tests on prism (ptest's default runner); the
// plain-Go sink tests of this package do not notice.
func TestMain(m *testing.M) {
	os.Exit(ptest.MainRet(m))
}

var t10 = time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC).UnixMilli()

func snapshot(start int64, revenue, count, rev int64, st model.ResultState) model.Row {
	return model.Row{WindowStart: start, WindowEnd: start + hour, Dims: "{}", RevenueMicros: revenue * 1_000_000,
		EventCount: count, Revision: rev, State: st}
}

// counters sums the write path's counters across steps.
func counters(pr beam.PipelineResult) map[metrics.Name]int64 {
	out := map[metrics.Name]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Namespace() == metrics.Namespace && strings.HasPrefix(c.Name(), "sink_") {
			out[metrics.Name(c.Name())] += c.Result()
		}
	}
	return out
}

// runWrite writes the four streams to spec on prism and returns the write
// path's counters.
func runWrite(t *testing.T, spec sink.Spec, rows []model.Row, late []model.TooLate, conflicts []model.Conflict, quarantined []model.Quarantined) map[metrics.Name]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	Write(s, spec,
		beam.CreateList(s, rows), beam.CreateList(s, late),
		beam.CreateList(s, conflicts), beam.CreateList(s, quarantined))
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// Prism's loopback worker keeps its DoFns (and their handles) until the
	// process ends; release them as the launcher does.
	if err := CloseShared(); err != nil {
		t.Fatal(err)
	}
	return counters(pr)
}

func TestWriteOnPrism(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revenue.db")
	spec := sink.Spec{Scheme: sink.SchemeSQLite, Path: path}
	// Out of order on purpose: the sink keeps the highest revision whatever
	// order the bundles arrive in.
	rows := []model.Row{
		snapshot(t10, 170, 3, 3, model.Final),
		snapshot(t10, 150, 2, 1, model.OnTime),
		snapshot(t10, 170, 3, 2, model.Late),
		snapshot(t10+hour, 1, 1, 1, model.OnTime),
	}
	late := []model.TooLate{{Position: "p0/a.jsonl:8", EventID: "D", EventTime: t10 + 600_000, Payload: []byte(`{"event_id":"D"}`)}}
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

	db, err := openSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	current, err := db.CurrentRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Row{snapshot(t10, 170, 3, 3, model.Final), snapshot(t10+hour, 1, 1, 1, model.OnTime)}
	for i := range want {
		want[i].Writer = writerStream
	}
	if !slices.Equal(current, want) {
		t.Errorf("hourly_revenue = %+v\nwant %+v", current, want)
	}
	if tl, err := db.TooLate(ctx); err != nil || len(tl) != 1 || tl[0].Reason != model.ReasonWindowClosed {
		t.Errorf("too_late_events = %+v, %v; want D with reason window_closed", tl, err)
	}
	if cf, err := db.Conflicts(ctx); err != nil || len(cf) != 1 || cf[0].EventID != "A" {
		t.Errorf("conflict_events = %+v, %v; want A", cf, err)
	}
	if q, err := db.Quarantined(ctx); err != nil || len(q) != 1 || q[0].Reason != model.ReasonMalformedJSON {
		t.Errorf("quarantined_events = %+v, %v; want one malformed_json", q, err)
	}
	changelog, err := db.Changelog(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The same output again (a replay) changes nothing.
	got = runWrite(t, spec, rows, late, conflicts, quarantined)
	if got[metrics.SinkRowsAccepted] != 0 || got[metrics.SinkRowsStale] != int64(len(rows)) || got[metrics.SinkAuditInserted] != 0 {
		t.Errorf("replay counters = %v, want every row stale and no audit row inserted", got)
	}
	again, err := db.Changelog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(changelog) {
		t.Errorf("replay added changelog rows: %d, then %d", len(changelog), len(again))
	}
	if LastWrite().IsZero() {
		t.Error("LastWrite is zero after writes in this process")
	}
}

// flaky fails its first n writes.
type flaky struct {
	failures int
	calls    atomic.Int32
	written  []sink.Batch
}

func (f *flaky) Write(_ context.Context, b sink.Batch) (sink.Result, error) {
	if int(f.calls.Add(1)) <= f.failures {
		return sink.Result{}, errors.New("database is locked")
	}
	f.written = append(f.written, b)
	return sink.Result{Accepted: len(b.Rows)}, nil
}

func (f *flaky) Close() error { return nil }

func testFn(s sink.Sink) *writeFn[model.Row] {
	return &writeFn[model.Row]{Spec: sink.Spec{Scheme: sink.SchemeConsole}, sink: s,
		attempts: writeAttempts, backoff: time.Millisecond, backoffCeiling: 4 * time.Millisecond}
}

func TestWriteRetriesTransientErrors(t *testing.T) {
	s := &flaky{failures: writeAttempts - 1}
	f := testFn(s)
	f.ProcessElement(snapshot(t10, 1, 1, 1, model.OnTime))
	f.ProcessElement(snapshot(t10, 2, 2, 2, model.Late))
	if err := f.FinishBundle(context.Background()); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	if got := int(s.calls.Load()); got != writeAttempts {
		t.Errorf("sink called %d times, want %d", got, writeAttempts)
	}
	if len(s.written) != 1 || len(s.written[0].Rows) != 2 {
		t.Errorf("written = %+v, want one batch of the bundle's 2 rows", s.written)
	}
	// The next bundle starts empty.
	if err := f.FinishBundle(context.Background()); err != nil || int(s.calls.Load()) != writeAttempts {
		t.Errorf("an empty bundle wrote (err %v, calls %d)", err, s.calls.Load())
	}
}

func TestWriteGivesUpLoudly(t *testing.T) {
	s := &flaky{failures: 1 << 30}
	f := testFn(s)
	f.ProcessElement(snapshot(t10, 1, 1, 1, model.OnTime))
	err := f.FinishBundle(context.Background())
	if err == nil || !strings.Contains(err.Error(), "giving up after 4 attempts") || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("FinishBundle error = %v, want it to give up after %d attempts with the cause", err, writeAttempts)
	}
	if got := int(s.calls.Load()); got != writeAttempts {
		t.Errorf("sink called %d times, want %d", got, writeAttempts)
	}
}

func TestWriteDoesNotRetryAnUnwritableBatch(t *testing.T) {
	s := &flaky{}
	f := testFn(s)
	f.ProcessElement(model.Row{WindowStart: t10, WindowEnd: t10 + hour, Dims: "{}", Revision: 1}) // no state
	if err := f.FinishBundle(context.Background()); err == nil {
		t.Fatal("FinishBundle accepted a row without result_state")
	}
	if got := s.calls.Load(); got != 0 {
		t.Errorf("sink called %d times for a batch it can never write, want 0", got)
	}
}

func TestWriteStopsRetryingOnCancel(t *testing.T) {
	s := &flaky{failures: 1 << 30}
	f := testFn(s)
	f.backoff, f.backoffCeiling = time.Hour, time.Hour
	f.ProcessElement(snapshot(t10, 1, 1, 1, model.OnTime))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := f.FinishBundle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FinishBundle error = %v, want the context's", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("FinishBundle took %v after its context ended", d)
	}
}

func TestWriteConsolePrintsOneTablePerBundle(t *testing.T) {
	var out bytes.Buffer
	f := testFn(NewConsole(&out))
	f.ProcessElement(snapshot(t10, 150, 2, 1, model.OnTime))
	f.ProcessElement(snapshot(t10+hour, 1, 1, 1, model.OnTime))
	if err := f.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.ProcessElement(snapshot(t10, 170, 3, 2, model.Late))
	if err := f.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Count(text, "Batch: ") != 2 || !strings.Contains(text, "Batch: 1") || !strings.Contains(text, "170.000000") {
		t.Errorf("console output:\n%s\nwant two batches, the second with the LATE row", text)
	}
}

func TestSharedHandles(t *testing.T) {
	spec := sink.Spec{Scheme: sink.SchemeJSONL, Path: t.TempDir()}
	ctx := context.Background()
	a, err := acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two DoFns on one spec got different handles: their revision guards would disagree")
	}
	if err := release(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, sink.Batch{Rows: []model.Row{snapshot(t10, 1, 1, 1, model.OnTime)}}); err != nil {
		t.Fatalf("handle closed while still referenced: %v", err)
	}
	if err := release(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(ctx, sink.Batch{Rows: []model.Row{snapshot(t10, 1, 1, 2, model.Late)}}); err == nil {
		t.Error("handle still open after its last release")
	}
}

func TestWriteRefusesABadSpec(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Write accepted an empty spec")
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	empty := beam.CreateList(s, []model.Row{})
	Write(s, sink.Spec{}, empty, empty, empty, empty)
}

// ExampleWrite shows the write path at the end of the pipeline: the four
// outputs of pipeline.Build go to the sink a --sink value names.
func ExampleWrite() {
	spec, err := sink.ParseSpec("sqlite:revenue.db")
	if err != nil {
		panic(err)
	}
	_, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, []model.Row{})
	tooLate := beam.CreateList(s, []model.TooLate{})
	conflicts := beam.CreateList(s, []model.Conflict{})
	quarantined := beam.CreateList(s, []model.Quarantined{})
	// In the job these come from pipeline.Build(s, records, options).
	Write(s, spec, rows, tooLate, conflicts, quarantined)
}

// WriteProgress on prism stores each checkpoint once, stamped with the
// run, and adds to none of the rows and audit counters, for the sinks the
// launcher reads progress from.
func TestWriteProgressOnPrism(t *testing.T) {
	dir := t.TempDir()
	in := []model.Checkpoint{
		{Partition: "p1", File: "a.jsonl", Offset: 30, Line: 3, MaxValid: model.NoWatermark},
		{Partition: "p0", File: "a.jsonl", Offset: 100, Line: 10, MaxValid: t10},
		{Partition: "p0", File: "b.jsonl", Offset: 40, Line: 4, MaxValid: t10 + hour},
		{Partition: "p0", File: "b.jsonl", Offset: 40, Line: 4, MaxValid: t10 + hour}, // sent again
	}
	for _, spec := range []sink.Spec{{Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "revenue.db")}, {Scheme: sink.SchemeJSONL, Path: filepath.Join(dir, "out")},
		{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "progress"}} {
		t.Run(spec.Scheme, func(t *testing.T) {
			if spec.Scheme == sink.SchemeBigQuery {
				bqtest.Start(t) // prism's loopback workers share the test's environment
			}
			p, s := beam.NewPipelineWithRoot()
			WriteProgress(s, spec, "run-7", beam.CreateList(s, in))
			pr, err := ptest.RunWithMetrics(p)
			if err != nil {
				t.Fatalf("pipeline failed: %v", err)
			}
			if err := CloseShared(); err != nil {
				t.Fatal(err)
			}
			if got := counters(pr); got[metrics.SinkRowsAccepted]+got[metrics.SinkRowsStale]+got[metrics.SinkAuditInserted] != 0 {
				t.Errorf("checkpoint writes moved the rows or audit counters: %v", got)
			}
			store, ok, err := OpenProgress(context.Background(), spec)
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
	WriteProgress(s, sink.Spec{Scheme: sink.SchemeConsole}, "run-7", beam.CreateList(s, []model.Checkpoint{{Partition: "p0"}}))
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
