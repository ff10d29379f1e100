package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/retry"

	_ "github.com/revenue-stream/hourly/coders" // element coders of the four streams
)

// Retries of a failed batch ride out a briefly unavailable sink; anything
// longer is an outage the job must report.
const (
	writeAttempts       = 4
	writeBackoff        = 200 * time.Millisecond
	writeBackoffCeiling = 2 * time.Second
)

func init() {
	register.DoFn1x0[model.Row](&writeFn[model.Row]{})
	register.DoFn1x0[model.TooLate](&writeFn[model.TooLate]{})
	register.DoFn1x0[model.Conflict](&writeFn[model.Conflict]{})
	register.DoFn1x0[model.Quarantined](&writeFn[model.Quarantined]{})
	register.Function1x2(keyByPartition)
	register.DoFn3x1[state.Provider, string, model.Checkpoint, error](&progressFn{})
}

// Write persists the pipeline's four outputs to the sink spec names, each
// bundle as one Batch (bigquery: keyed state appended as flush says; other
// sinks ignore flush). Like beam.ParDo on a bad DoFn, it panics on a spec
// ParseSpec refuses or a bad flush policy: callers validate --sink first.
func Write(s beam.Scope, spec Spec, flush FlushPolicy, rows, tooLate, conflicts, quarantined beam.PCollection) {
	if _, err := ParseSpec(spec.String()); err != nil {
		panic(fmt.Errorf("sinks.Write: %w", err))
	}
	b, err := Lookup(spec.Scheme)
	if err != nil {
		panic(fmt.Errorf("sinks.Write: %w", err))
	}
	if b.Write != nil {
		b.Write(s, spec, checked(flush, "sinks.Write"), rows, tooLate, conflicts, quarantined)
		return
	}
	s = s.Scope("sinks.Write")
	beam.ParDo0(s.Scope("Rows"), &writeFn[model.Row]{Spec: spec}, rows)
	beam.ParDo0(s.Scope("TooLate"), &writeFn[model.TooLate]{Spec: spec}, tooLate)
	beam.ParDo0(s.Scope("Conflicts"), &writeFn[model.Conflict]{Spec: spec}, conflicts)
	beam.ParDo0(s.Scope("Quarantined"), &writeFn[model.Quarantined]{Spec: spec}, quarantined)
}

// WriteProgress persists folder-source checkpoints, stamped with run, to a
// ProgressStore (SQLite, jsonl, BigQuery); other sinks wire nothing. Keyed by
// partition, it sees a checkpoint only once the bundle that emitted it
// committed, read counters included: the launcher's seal relies on that.
func WriteProgress(s beam.Scope, spec Spec, flush FlushPolicy, run string, checkpoints beam.PCollection) {
	b, err := Lookup(spec.Scheme)
	switch {
	case err != nil || b.Existing == nil:
		return
	case b.WriteProgress != nil:
		b.WriteProgress(s, spec, checked(flush, "sinks.WriteProgress"), run, checkpoints)
		return
	}
	s = s.Scope("sinks.WriteProgress")
	keyed := beam.ParDo(s, keyByPartition, checkpoints)
	beam.ParDo0(s, &progressFn{writeFn: writeFn[model.Checkpoint]{Spec: spec}, Run: run, Last: state.MakeValueState[model.Checkpoint]("last")}, keyed)
}

func keyByPartition(c model.Checkpoint) (string, model.Checkpoint) { return c.Partition, c }

// progressFn writes a bundle's checkpoints as one Batch through writeFn's
// sink and retries, adding to no sink counter: a checkpoint is not an output.
// Last is the partition's last checkpoint written, not written again.
type progressFn struct {
	writeFn[model.Checkpoint]
	Run  string
	Last state.Value[model.Checkpoint]
}

func (f *progressFn) ProcessElement(sp state.Provider, _ string, c model.Checkpoint) error {
	c.Run = f.Run
	last, ok, err := f.Last.Read(sp)
	if err != nil {
		return fmt.Errorf("sinks.WriteProgress: read state: %w", err)
	}
	if ok && last == c {
		return nil
	}
	if err := f.Last.Write(sp, c); err != nil {
		return fmt.Errorf("sinks.WriteProgress: write state: %w", err)
	}
	f.buf = append(f.buf, c)
	return nil
}

// FinishBundle writes the checkpoints; on error the runner retries the bundle
// with its state rolled back.
func (f *progressFn) FinishBundle(ctx context.Context) error {
	b, ok := f.take()
	if !ok {
		return nil
	}
	_, err := f.write(ctx, b)
	return err
}

// checked returns p, panicking if it is invalid; verb names the caller.
func checked(p FlushPolicy, verb string) FlushPolicy {
	if err := p.Validate(); err != nil {
		panic(fmt.Errorf("%s: %w", verb, err))
	}
	return p
}

// writeFn buffers one bundle of a stream and writes it as one Batch.
type writeFn[T Record] struct {
	Spec Spec

	sink                            Sink
	buf                             []T
	accepted, stale, audit, retries beam.Counter
	attempts                        int
	backoff, backoffCeiling         time.Duration
}

func (f *writeFn[T]) Setup(ctx context.Context) error {
	sink, err := Acquire(ctx, f.Spec)
	if err != nil {
		return fmt.Errorf("sinks.Write: %w", err)
	}
	f.sink = sink
	f.accepted = metrics.Counter(metrics.SinkRowsAccepted)
	f.stale = metrics.Counter(metrics.SinkRowsStale)
	f.audit = metrics.Counter(metrics.SinkAuditInserted)
	f.retries = metrics.Counter(metrics.SinkRetries)
	if f.attempts == 0 {
		f.attempts, f.backoff, f.backoffCeiling = writeAttempts, writeBackoff, writeBackoffCeiling
	}
	return nil
}

func (f *writeFn[T]) StartBundle() { f.buf = f.buf[:0] }

func (f *writeFn[T]) ProcessElement(v T) { f.buf = append(f.buf, v) }

// FinishBundle writes the bundle. An error fails the job: output that cannot
// be written must not be acknowledged and lost.
func (f *writeFn[T]) FinishBundle(ctx context.Context) error {
	b, ok := f.take()
	if !ok {
		return nil
	}
	if faults.Fire(faults.FailBeforeSinkWrite) {
		return fmt.Errorf("sinks.Write %s: injected permanent failure (%s) before writing %d rows", f.Spec, faults.FailBeforeSinkWrite, len(b.Rows))
	}
	res, err := f.write(ctx, b)
	if err != nil {
		return err
	}
	if faults.Fire(faults.CrashAfterSinkWrite) {
		faults.Crash(faults.CrashAfterSinkWrite)
	}
	f.accepted.Inc(ctx, int64(res.Accepted))
	f.stale.Inc(ctx, int64(res.Stale))
	f.audit.Inc(ctx, int64(res.AuditInserted))
	return nil
}

// write applies the batch, retrying with backoff: safe, since rows already
// written become stale and audit rows are keyed by position. A batch no table
// can key is refused at once.
func (f *writeFn[T]) write(ctx context.Context, b Batch) (Result, error) {
	if err := b.Validate(); err != nil {
		return Result{}, fmt.Errorf("sinks.Write %s: %w", f.Spec, err)
	}
	var res Result
	n, err := retry.Retrier{Attempts: f.attempts,
		Wait:  func(attempt int) time.Duration { return min(f.backoff<<(attempt-1), f.backoffCeiling) },
		Level: slog.LevelWarn, Msg: "sink write failed, retrying", Attrs: []any{"sink", f.Spec.String()},
	}.Do(ctx, func() (err error) {
		res, err = f.sink.Write(ctx, b)
		return err
	})
	f.retries.Inc(ctx, int64(n-1))
	if err != nil {
		return Result{}, fmt.Errorf("sinks.Write %s: %d rows, %d audit records: giving up after %d attempts: %w",
			f.Spec, len(b.Rows), b.Audit.Len(), n, err)
	}
	NoteWrite()
	return res, nil
}

func (f *writeFn[T]) Teardown() error {
	if f.sink == nil {
		return nil
	}
	f.sink = nil
	return Release(f.Spec)
}

// Record is what a write step takes: an element of one of Batch's fields.
type Record interface {
	model.Row | model.TooLate | model.Conflict | model.Quarantined | model.Checkpoint
}

// take moves the bundle's elements into the Batch field of their type and
// clears the buffer, so a failed bundle's elements cannot leak into the next;
// ok is false for an empty bundle (no empty transactions, no empty console
// tables).
func (f *writeFn[T]) take() (b Batch, ok bool) {
	if len(f.buf) == 0 {
		return b, false
	}
	switch vs := any(slices.Clone(f.buf)).(type) {
	case []model.Row:
		b.Rows = vs
	case []model.TooLate:
		b.TooLate = vs
	case []model.Conflict:
		b.Conflicts = vs
	case []model.Quarantined:
		b.Quarantined = vs
	case []model.Checkpoint:
		b.Progress = vs
	}
	f.buf = f.buf[:0]
	return b, true
}

// shared holds one reference-counted sink per spec for this process's write
// DoFns: prism runs several instances per spec in one process (loopback), and
// jsonl's and console's revision guard lives in the handle, so two handles
// would each admit the other's rows. Elsewhere it is one handle per worker
// process; correctness must not rest on it.
var shared = struct {
	sync.Mutex
	m map[string]*handle
}{m: map[string]*handle{}}

type handle struct {
	s    Sink
	refs int
}

// Acquire returns this process's shared sink for spec, opening it on first
// use; a write DoFn calls it in Setup, and Release in Teardown.
func Acquire(ctx context.Context, spec Spec) (Sink, error) {
	shared.Lock()
	defer shared.Unlock()
	if h, ok := shared.m[spec.String()]; ok {
		h.refs++
		return h.s, nil
	}
	s, err := Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	shared.m[spec.String()] = &handle{s: s, refs: 1}
	return s, nil
}

// Release drops one reference to spec's shared sink, closing it with the last.
func Release(spec Spec) error {
	shared.Lock()
	defer shared.Unlock()
	h, ok := shared.m[spec.String()]
	if !ok {
		return nil
	}
	if h.refs--; h.refs > 0 {
		return nil
	}
	delete(shared.m, spec.String())
	if err := h.s.Close(); err != nil {
		return fmt.Errorf("sinks.Write: %w", err)
	}
	return nil
}

// CloseShared closes every shared sink still held, since prism promises no
// Teardown: an in-process launcher calls it after the run, before reading.
func CloseShared() error {
	shared.Lock()
	defer shared.Unlock()
	var errs []error
	for key, h := range shared.m {
		if err := h.s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("sinks: close %v: %w", key, err))
		}
		delete(shared.m, key)
	}
	return errors.Join(errs...)
}

// lastWrite is when (Unix ns) a write DoFn of this process last committed
// output: a loopback launcher waits for it to settle before it cancels a job.
var lastWrite atomic.Int64

// NoteWrite records that a write DoFn of this process committed output now.
func NoteWrite() { lastWrite.Store(time.Now().UnixNano()) }

// LastWrite reports when a write DoFn in this process last committed output
// (zero if none); it sees nothing of remote workers.
func LastWrite() time.Time {
	if ns := lastWrite.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
