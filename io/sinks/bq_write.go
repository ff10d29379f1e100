package sinks

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	register.DoFn2x1[model.Row, func(string, []byte), error](&bqKeyFn[model.Row]{})
	register.DoFn2x1[model.TooLate, func(string, []byte), error](&bqKeyFn[model.TooLate]{})
	register.DoFn2x1[model.Conflict, func(string, []byte), error](&bqKeyFn[model.Conflict]{})
	register.DoFn2x1[model.Quarantined, func(string, []byte), error](&bqKeyFn[model.Quarantined]{})
	register.DoFn2x1[model.Checkpoint, func(string, []byte), error](&bqKeyFn[model.Checkpoint]{})
	register.DoFn6x1[context.Context, beam.EventTime, state.Provider, timers.Provider, string, []byte, error](&bqAppendFn{})
	register.Emitter2[string, []byte]()
}

// writeBigQuery is the BigQuery write path. Each output record is encoded
// as its table's row (written_at stamped here) and keyed by table and
// shard; the keyed, stateful append step buffers the rows and appends them
// through the Storage Write API on a processing-time timer (FlushPolicy).
//
// Why keyed state and not FinishBundle: the rows reach the append step
// through the runner's shuffle and are buffered in state the runner
// committed, so a retried bundle of the stage that computes revisions (other
// bundling, other EARLY ticks) can never reach BigQuery with content that
// differs from what a failed attempt wrote; and the append rate follows the
// flush interval, not the bundle rate.
func writeBigQuery(s beam.Scope, spec Spec, p FlushPolicy, rows, tooLate, conflicts, quarantined beam.PCollection) {
	s = s.Scope("sinks.WriteBigQuery")
	// The row encoding must be the one the workers' write client declares:
	// both follow BIGQUERY_STORAGE_EMULATOR_HOST (see bqRowType).
	emu := storageEmulator()
	keyed := []beam.PCollection{
		beam.ParDo(s.Scope("Rows"), &bqKeyFn[model.Row]{Shards: p.Shards, Emulator: emu}, rows),
		beam.ParDo(s.Scope("TooLate"), &bqKeyFn[model.TooLate]{Shards: p.Shards, Emulator: emu}, tooLate),
		beam.ParDo(s.Scope("Conflicts"), &bqKeyFn[model.Conflict]{Shards: p.Shards, Emulator: emu}, conflicts),
		beam.ParDo(s.Scope("Quarantined"), &bqKeyFn[model.Quarantined]{Shards: p.Shards, Emulator: emu}, quarantined),
	}
	appendBigQuery(s, spec, p, beam.Flatten(s, keyed...))
}

// writeBigQueryProgress appends a run's checkpoints to source_checkpoints
// through the same keyed, batched step as the rows: one append per flush,
// not one write stream per bundle of files read. Being keyed, the step
// reads a checkpoint only once the source's bundle that emitted it has
// committed (see WriteProgress).
func writeBigQueryProgress(s beam.Scope, spec Spec, p FlushPolicy, run string, checkpoints beam.PCollection) {
	s = s.Scope("sinks.WriteBigQueryProgress")
	keyed := beam.ParDo(s.Scope("Checkpoints"), &bqKeyFn[model.Checkpoint]{Shards: 1, Emulator: storageEmulator(), Run: run}, checkpoints)
	appendBigQuery(s, spec, p, keyed)
}

// appendBigQuery is the keyed append step over "table/shard"-keyed rows.
func appendBigQuery(s beam.Scope, spec Spec, p FlushPolicy, keyed beam.PCollection) {
	beam.ParDo0(s.Scope("Append"), &bqAppendFn{
		Spec:   spec,
		Policy: p,
		Rows:   state.MakeBagState[[]byte]("rows"),
		Count:  state.MakeValueState[int64]("count"),
		Bytes:  state.MakeValueState[int64]("bytes"),
		Sealed: state.MakeValueState[[]byte]("sealed"),
		At:     state.MakeValueState[int64]("at"),
		Flush:  timers.InProcessingTime("flush"),
	}, keyed)
}

// shardOf spreads a table's records over n keys by a stable hash of the
// record's key, so the same record always lands on the same shard.
func shardOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// bqKeyFn encodes a record as its table's row and keys it "table/shard".
type bqKeyFn[T model.Row | model.TooLate | model.Conflict | model.Quarantined | model.Checkpoint] struct {
	Shards   int
	Emulator bool   // encode for the emulator (see bqRowType.epochStrings)
	Run      string // stamps checkpoints (model.Checkpoint.Run)
}

func (f *bqKeyFn[T]) ProcessElement(v T, emit func(string, []byte)) error {
	if err := validateBatch(batchOf([]T{v})); err != nil {
		return fmt.Errorf("sinks.Write: %w", err)
	}
	var (
		table, key string
		row        []byte
		err        error
	)
	rt := rowTypesFor(f.Emulator)
	switch v := any(v).(type) {
	case model.Row:
		table, key = bqChangelog, v.Key()
		row, err = encodeSnapshot(rt, v, time.Now())
	case model.TooLate:
		table, key = bqTooLate, v.Position
		row, err = encodeRow(rt, tooLateCodec, v)
	case model.Conflict:
		table, key = bqConflicts, v.Position
		row, err = encodeRow(rt, conflictCodec, v)
	case model.Quarantined:
		table, key = bqQuarantined, v.Position
		row, err = encodeRow(rt, quarantinedCodec, v)
	case model.Checkpoint:
		v.Run = f.Run
		table, key = bqCheckpoints, v.Partition
		row, err = encodeRow(rt, checkpointCodec, checkpointRow{Checkpoint: v, At: time.Now()})
	}
	if err != nil {
		return fmt.Errorf("sinks.Write: %s %s: %w", table, key, err)
	}
	emit(table+"/"+strconv.Itoa(shardOf(key, max(f.Shards, 1))), row)
	return nil
}

// bqAppendFn buffers a (table, shard)'s rows and appends them (see onRow and
// onFlush for the rules).
type bqAppendFn struct {
	Spec   Spec
	Policy FlushPolicy

	Rows   state.Bag[[]byte]
	Count  state.Value[int64]
	Bytes  state.Value[int64]
	Sealed state.Value[[]byte]
	At     state.Value[int64] // when the flush timer fires, Unix ns; absent when not armed
	Flush  timers.ProcessingTime

	sink                   *BigQuery
	accepted, audit, calls beam.Counter
}

func (f *bqAppendFn) Setup(ctx context.Context) error {
	s, err := acquire(ctx, f.Spec)
	if err != nil {
		return fmt.Errorf("sinks.Write: %w", err)
	}
	bq, ok := s.(*BigQuery)
	if !ok {
		return fmt.Errorf("sinks.Write %s: not a BigQuery sink", f.Spec)
	}
	f.sink = bq
	f.accepted = metrics.Counter(metrics.SinkRowsAccepted)
	f.audit = metrics.Counter(metrics.SinkAuditInserted)
	f.calls = metrics.Counter(metrics.SinkAppendRequests)
	return nil
}

func (f *bqAppendFn) Teardown() error {
	if f.sink == nil {
		return nil
	}
	f.sink = nil
	return release(f.Spec)
}

func (f *bqAppendFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, row []byte) error {
	at, err := onRow(&beamStore{f: f, sp: sp}, row, time.Now(), f.Policy)
	if err != nil {
		return fmt.Errorf("sinks.Write %s %s: %w", f.Spec, key, err)
	}
	// Counted when buffered, not when appended: prism (v2.77.0) now and then
	// drops the counters of a processing-time timer's bundle. A job that
	// ends without error has appended every buffered row; a running one
	// is at most one flush interval behind these counts.
	// A checkpoint is not an output of the records: no counter.
	switch {
	case strings.HasPrefix(key, bqChangelog+"/"):
		f.accepted.Inc(ctx, 1)
	case !strings.HasPrefix(key, bqCheckpoints+"/"):
		f.audit.Inc(ctx, 1)
	}
	if !at.IsZero() {
		// The timer holds the watermark at the row's timestamp, so a
		// bounded run cannot finish with rows still buffered.
		f.Flush.Set(tp, at, timers.WithOutputTimestamp(ts.ToTime()))
	}
	return nil
}

func (f *bqAppendFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, _ timers.Context) error {
	table, _, _ := strings.Cut(key, "/")
	if _, ok := bqRowTypes[table]; !ok {
		return fmt.Errorf("sinks.Write %s: key %q names no append table", f.Spec, key)
	}
	res, err := onFlush(ctx, &beamStore{f: f, sp: sp}, f.sink.api, table, time.Now(), f.Policy, f.sink.sleep)
	f.calls.Inc(ctx, int64(res.Requests))
	if err != nil {
		return fmt.Errorf("sinks.Write %s: %w", f.Spec, err)
	}
	if !res.Again.IsZero() {
		f.Flush.Set(tp, res.Again, timers.WithOutputTimestamp(ts.ToTime()))
	}
	if res.Appended > 0 {
		noteWrite()
	}
	return nil
}

// beamStore is the batchStore of one key in Beam state.
type beamStore struct {
	f  *bqAppendFn
	sp state.Provider
}

func (b *beamStore) Buffer(row []byte) (int64, int64, error) {
	if err := b.f.Rows.Add(b.sp, row); err != nil {
		return 0, 0, err
	}
	n, _, err := b.f.Count.Read(b.sp)
	if err != nil {
		return 0, 0, err
	}
	size, _, err := b.f.Bytes.Read(b.sp)
	if err != nil {
		return 0, 0, err
	}
	n, size = n+1, size+int64(len(row))
	if err := b.f.Count.Write(b.sp, n); err != nil {
		return 0, 0, err
	}
	return n, size, b.f.Bytes.Write(b.sp, size)
}

func (b *beamStore) Buffered() ([][]byte, error) {
	rows, _, err := b.f.Rows.Read(b.sp)
	return rows, err
}

func (b *beamStore) ClearBuffer() error {
	if err := b.f.Rows.Clear(b.sp); err != nil {
		return err
	}
	if err := b.f.Count.Clear(b.sp); err != nil {
		return err
	}
	return b.f.Bytes.Clear(b.sp)
}

func (b *beamStore) Sealed() (sealedBatch, bool, error) {
	v, ok, err := b.f.Sealed.Read(b.sp)
	if err != nil || !ok {
		return sealedBatch{}, false, err
	}
	sb, err := decodeSealed(v)
	return sb, err == nil, err
}

func (b *beamStore) Seal(sb sealedBatch) error { return b.f.Sealed.Write(b.sp, sb.encode()) }
func (b *beamStore) ClearSealed() error        { return b.f.Sealed.Clear(b.sp) }

func (b *beamStore) Armed() (time.Time, bool, error) {
	ns, ok, err := b.f.At.Read(b.sp)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return time.Unix(0, ns), true, nil
}

func (b *beamStore) Arm(at time.Time) error { return b.f.At.Write(b.sp, at.UnixNano()) }
func (b *beamStore) Disarm() error          { return b.f.At.Clear(b.sp) }
