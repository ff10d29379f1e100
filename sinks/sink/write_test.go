package sink

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/model"
)

const hour = int64(time.Hour / time.Millisecond)

var t10 = time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC).UnixMilli()

func snapshot(start int64, revenue, count, rev int64, st model.ResultState) model.Row {
	return model.Row{WindowStart: start, WindowEnd: start + hour, Dims: "{}", RevenueMicros: revenue * 1_000_000,
		EventCount: count, Revision: rev, State: st}
}

// flaky fails its first n writes.
type flaky struct {
	failures int
	calls    atomic.Int32
	written  []Batch
}

func (f *flaky) Write(_ context.Context, b Batch) (Result, error) {
	if int(f.calls.Add(1)) <= f.failures {
		return Result{}, errors.New("database is locked")
	}
	f.written = append(f.written, b)
	return Result{Accepted: len(b.Rows)}, nil
}

func (f *flaky) Close() error { return nil }

func testFn(s Sink) *writeFn[model.Row] {
	return &writeFn[model.Row]{Spec: Spec{Scheme: SchemeConsole}, sink: s,
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

func TestWriteRefusesABadSpec(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Write accepted an empty spec")
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	empty := beam.CreateList(s, []model.Row{})
	Write(s, Spec{}, DefaultFlushPolicy, empty, empty, empty, empty)
}

// ExampleWrite shows the write path at the end of the pipeline: the four
// outputs of pipeline.Build go to the sink a --sink value names.
func ExampleWrite() {
	spec, err := ParseSpec("sqlite:revenue.db")
	if err != nil {
		panic(err)
	}
	_, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, []model.Row{})
	tooLate := beam.CreateList(s, []model.TooLate{})
	conflicts := beam.CreateList(s, []model.Conflict{})
	quarantined := beam.CreateList(s, []model.Quarantined{})
	// In the job these come from pipeline.Build(s, records, options).
	Write(s, spec, DefaultFlushPolicy, rows, tooLate, conflicts, quarantined)
}

type closer struct {
	Sink
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

// One handle per spec: opened once, closed with the last release, and
// CloseShared closes what is left.
func TestHandles(t *testing.T) {
	opens := 0
	Register("handles", Backend{Open: func(_ context.Context, spec Spec) (Sink, error) {
		if spec.Path == "bad" {
			return nil, errors.New("boom")
		}
		opens++
		return &closer{}, nil
	}})
	t.Cleanup(func() {
		mu.Lock()
		delete(backends, "handles")
		mu.Unlock()
	})
	ctx := context.Background()
	x, y := Spec{Scheme: "handles", Path: "x"}, Spec{Scheme: "handles", Path: "y"}
	a, err := Acquire(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Acquire(ctx, x)
	if a != b || opens != 1 {
		t.Fatalf("two handles for one spec (%d opens)", opens)
	}
	if err := Release(x); err != nil || a.(*closer).closed != 0 {
		t.Fatalf("closed with a reference left (err %v)", err)
	}
	if err := Release(x); err != nil || a.(*closer).closed != 1 {
		t.Fatalf("not closed with the last release: closed %d, err %v", a.(*closer).closed, err)
	}
	if _, err := Acquire(ctx, Spec{Scheme: "handles", Path: "bad"}); err == nil {
		t.Fatal("an open error was not returned")
	}
	c, _ := Acquire(ctx, y)
	if err := CloseShared(); err != nil || c.(*closer).closed != 1 {
		t.Fatalf("CloseShared: closed %d, err %v", c.(*closer).closed, err)
	}
	if d, _ := Acquire(ctx, y); d == c {
		t.Fatal("CloseShared kept a closed handle")
	}
	if err := CloseShared(); err != nil {
		t.Fatal(err)
	}
}

func TestLastWrite(t *testing.T) {
	lastWrite.Store(0) // as before any write
	if !LastWrite().IsZero() {
		t.Fatal("LastWrite is set before any write")
	}
	before := time.Now()
	NoteWrite()
	if got := LastWrite(); got.Before(before) || got.After(time.Now()) {
		t.Fatalf("LastWrite = %v, want between %v and now", got, before)
	}
}
