package bigquery

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

func init() {
	register.DoFn2x1[model.Row, func(string, []byte), error](&bqKeyFn[model.Row]{})
	register.DoFn2x1[model.TooLate, func(string, []byte), error](&bqKeyFn[model.TooLate]{})
	register.DoFn2x1[model.Conflict, func(string, []byte), error](&bqKeyFn[model.Conflict]{})
	register.DoFn2x1[model.Quarantined, func(string, []byte), error](&bqKeyFn[model.Quarantined]{})
	register.DoFn2x1[model.Checkpoint, func(string, []byte), error](&bqKeyFn[model.Checkpoint]{})
	register.DoFn5x1[context.Context, state.Provider, timers.Provider, string, []byte, error](&bqAppendFn{})
	register.DoFn2x0[[]byte, func(string, []byte)](&bqTickFn{})
	register.Emitter2[string, []byte]()
}

// writeBigQuery encodes each record as its table's row, keys it by table and
// shard, and appends through a keyed, stateful step. Keyed state, not
// FinishBundle: a retried upstream bundle with other content can never reach
// BigQuery, and the append rate follows the flush interval, not bundles.
func writeBigQuery(s beam.Scope, spec sink.Spec, p sink.FlushPolicy, rows, tooLate, conflicts, quarantined beam.PCollection) {
	s = s.Scope("sinks.WriteBigQuery")
	emu := storageEmulator()
	keyed := []beam.PCollection{
		beam.ParDo(s.Scope("Rows"), &bqKeyFn[model.Row]{Shards: p.Shards, Emulator: emu}, rows),
		beam.ParDo(s.Scope("TooLate"), &bqKeyFn[model.TooLate]{Shards: p.Shards, Emulator: emu}, tooLate),
		beam.ParDo(s.Scope("Conflicts"), &bqKeyFn[model.Conflict]{Shards: p.Shards, Emulator: emu}, conflicts),
		beam.ParDo(s.Scope("Quarantined"), &bqKeyFn[model.Quarantined]{Shards: p.Shards, Emulator: emu}, quarantined),
	}
	var keys []string
	for _, name := range []string{table.HourlyRevenueChangelog.Name, table.TooLateEvents.Name, table.ConflictEvents.Name, table.QuarantinedEvents.Name} {
		for shard := range max(p.Shards, 1) {
			keys = append(keys, name+"/"+strconv.Itoa(shard))
		}
	}
	appendBigQuery(s, spec, p, beam.Flatten(s, keyed...), keys)
}

// writeBigQueryProgress appends a run's checkpoints through the same step.
func writeBigQueryProgress(s beam.Scope, spec sink.Spec, p sink.FlushPolicy, run string, checkpoints beam.PCollection) {
	s = s.Scope("sinks.WriteBigQueryProgress")
	keyed := beam.ParDo(s.Scope("Checkpoints"), &bqKeyFn[model.Checkpoint]{Shards: 1, Emulator: storageEmulator(), Run: run}, checkpoints)
	appendBigQuery(s, spec, p, keyed, []string{table.SourceCheckpoints.Name + "/0"})
}

// appendBigQuery is the append step over "table/shard"-keyed rows; with a
// clock, each of keys gets an empty row every Interval.
func appendBigQuery(s beam.Scope, spec sink.Spec, p sink.FlushPolicy, keyed beam.PCollection, keys []string) {
	if p.Clock {
		ticks := beam.ParDo(s.Scope("Ticks"), &bqTickFn{Keys: keys}, clock.Ticks(s, p.Interval))
		keyed = beam.Flatten(s, keyed, ticks)
	}
	beam.ParDo0(s.Scope("Append"), &bqAppendFn{
		Spec:   spec,
		Policy: p,
		Rows:   state.MakeBagState[[]byte]("rows"),
		Count:  state.MakeValueState[int64]("count"),
		Bytes:  state.MakeValueState[int64]("bytes"),
		Sealed: state.MakeValueState[[]byte]("sealed"),
		Drain:  timers.InEventTime("drain"),
	}, keyed)
}

// bqTickFn sends a clock tick to every key of the append step.
type bqTickFn struct{ Keys []string }

func (f *bqTickFn) ProcessElement(_ []byte, emit func(string, []byte)) {
	for _, k := range f.Keys {
		emit(k, nil)
	}
}

// shardOf is a stable hash of key modulo n.
func shardOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// bqKeyFn encodes a record as its table's row and keys it "table/shard".
type bqKeyFn[T sink.Record] struct {
	Shards   int
	Emulator bool   // encode for the emulator (see bqRowType.epochStrings)
	Run      string // stamps checkpoints (model.Checkpoint.Run)
}

func (f *bqKeyFn[T]) ProcessElement(v T, emit func(string, []byte)) error {
	if err := sink.Check(&v); err != nil {
		return fmt.Errorf("sinks.Write: %w", err)
	}
	rec := any(v)
	if c, ok := rec.(model.Checkpoint); ok {
		c.Run = f.Run
		rec = c
	}
	t, key, row, err := appendRow(rowTypesFor(f.Emulator), rec, time.Now())
	if err != nil {
		return fmt.Errorf("sinks.Write: %s %s: %w", t.Name, key, err)
	}
	emit(t.Name+"/"+strconv.Itoa(shardOf(key, max(f.Shards, 1))), row)
	return nil
}

// acquire is sink.Acquire; tests hand the write step a fake sink.
var acquire = sink.Acquire

// bqAppendFn buffers a (table, shard)'s rows and appends them (onRow,
// flushStep). An event-time timer at the end of the global window drains a
// bounded input, refiring while rows are left. No processing-time timer: the
// portable Flink runner fires none for Go (Beam filters TestTimers_ProcessingTime).
type bqAppendFn struct {
	Spec   sink.Spec
	Policy sink.FlushPolicy

	Rows   state.Bag[[]byte]
	Count  state.Value[int64]
	Bytes  state.Value[int64]
	Sealed state.Value[[]byte]
	Drain  timers.EventTime

	sink                   *BigQuery
	accepted, audit, calls beam.Counter
	// sealedHere holds the keys that sealed a batch in this bundle.
	sealedHere map[string]bool
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
	return sink.Release(f.Spec)
}

func (f *bqAppendFn) StartBundle() { clear(f.sealedHere) }

func (f *bqAppendFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key string, row []byte) error {
	name, err := f.table(key)
	if err != nil {
		return err
	}
	st := &beamStore{f: f, sp: sp}
	if len(row) == 0 { // a clock tick
		res, err := flushStep(ctx, st, f.sink.api, f.sink.streams, name, f.sealedHere[key], f.sink.sleep)
		return f.done(ctx, key, res, err)
	}
	first, res, err := onRow(ctx, st, f.sink.api, f.sink.streams, name, row, f.Policy, f.sealedHere[key], f.sink.sleep)
	if err := f.done(ctx, key, res, err); err != nil {
		return err
	}
	if first {
		f.Drain.Set(tp, mtime.EndOfGlobalWindowTime.ToTime())
	}
	// Counted when buffered: a job ending without error appended them all.
	// A checkpoint is not an output: no counter.
	switch {
	case name == table.HourlyRevenueChangelog.Name:
		f.accepted.Inc(ctx, 1)
	case name != table.SourceCheckpoints.Name:
		f.audit.Inc(ctx, 1)
	}
	return nil
}

// OnTimer is the end-of-input drain, refired while rows are left.
func (f *bqAppendFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, key string, _ timers.Context) error {
	name, err := f.table(key)
	if err != nil {
		return err
	}
	res, err := flushStep(ctx, &beamStore{f: f, sp: sp}, f.sink.api, f.sink.streams, name, f.sealedHere[key], f.sink.sleep)
	if err := f.done(ctx, key, res, err); err != nil {
		return err
	}
	if res.Pending {
		f.Drain.Set(tp, mtime.EndOfGlobalWindowTime.ToTime())
	}
	return nil
}

func (f *bqAppendFn) done(ctx context.Context, key string, res flushResult, err error) error {
	f.calls.Inc(ctx, int64(res.Requests))
	if err != nil {
		return fmt.Errorf("sinks.Write %s %s: %w", f.Spec, key, err)
	}
	if res.Sealed {
		if f.sealedHere == nil {
			f.sealedHere = map[string]bool{}
		}
		f.sealedHere[key] = true
	}
	if res.Appended > 0 {
		sink.NoteWrite()
	}
	return nil
}

func (f *bqAppendFn) table(key string) (string, error) {
	name, _, _ := strings.Cut(key, "/")
	if _, ok := bqRowTypes[name]; !ok {
		return "", fmt.Errorf("sinks.Write %s: key %q names no append table", f.Spec, key)
	}
	return name, nil
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

// ClearBuffer clears all three states: an error fails the bundle, rolled back.
func (b *beamStore) ClearBuffer() error {
	return cmp.Or(b.f.Rows.Clear(b.sp), b.f.Count.Clear(b.sp), b.f.Bytes.Clear(b.sp))
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
