package sink

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Backends is the package whose import registers every scheme ParseSpec
// accepts: each backend's package (sinks/sqlite, sinks/jsonl, sinks/console,
// sinks/bigquery) registers its own in init, and sinks/all imports them all.
const Backends = "github.com/revenue-stream/hourly/sinks/all"

// Backend is a scheme's implementation. Open is required; the rest are nil
// where the sink has no such part.
type Backend struct {
	// Open opens or creates the sink for writing.
	Open func(ctx context.Context, spec Spec) (Sink, error)
	// Existing opens an existing sink, a Reader and ProgressStore, to read
	// back or, with progress, for the launcher's progress tables; ok is false
	// when there is nothing yet. Such a handle may refuse writes (jsonl's).
	Existing func(ctx context.Context, spec Spec, progress bool) (s Sink, ok bool, err error)
	// Write and WriteProgress replace the bundle-per-Batch write steps
	// (BigQuery's keyed append step).
	Write         func(s beam.Scope, spec Spec, flush FlushPolicy, rows, tooLate, conflicts, quarantined beam.PCollection)
	WriteProgress func(s beam.Scope, spec Spec, flush FlushPolicy, run string, checkpoints beam.PCollection)
}

var (
	mu       sync.RWMutex
	backends = map[string]Backend{}
)

// Register makes scheme's backend known to Lookup; backends call it from
// init. A second registration or a nil Open panics, as in database/sql.
func Register(scheme string, b Backend) {
	if b.Open == nil {
		panic(fmt.Sprintf("sink.Register %q: nil Open", scheme))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic(fmt.Sprintf("sink.Register %q: registered twice", scheme))
	}
	backends[scheme] = b
}

// Lookup returns scheme's backend. pipeline.Options.Validate calls it to
// refuse an unregistered scheme before any work.
func Lookup(scheme string) (Backend, error) {
	mu.RLock()
	defer mu.RUnlock()
	if b, ok := backends[scheme]; ok {
		return b, nil
	}
	switch scheme {
	case SchemeSQLite, SchemeJSONL, SchemeConsole, SchemeBigQuery:
		return Backend{}, fmt.Errorf("sink scheme %q has no backend registered in this binary: import _ %q in its main package (its init registers %s)", scheme, Backends, forms)
	}
	return Backend{}, fmt.Errorf("unknown sink scheme %q: want %s", scheme, forms)
}

// Open opens the sink a Spec names (the console writes to os.Stdout). On
// error the Sink is a nil interface, never a typed nil.
func Open(ctx context.Context, spec Spec) (Sink, error) {
	b, err := Lookup(spec.Scheme)
	if err != nil {
		return nil, err
	}
	s, err := b.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OpenReader opens an existing readable sink. ok is false for the console and
// for a SQLite file or jsonl directory that does not exist yet. A jsonl reader
// cannot write.
func OpenReader(ctx context.Context, spec Spec) (Reader, bool, error) {
	return openExisting[Reader](ctx, spec, false)
}

// OpenProgress opens an existing sink's progress tables for the launcher; ok
// is false as for OpenReader. A jsonl handle writes only source_resume.jsonl.
func OpenProgress(ctx context.Context, spec Spec) (ProgressStore, bool, error) {
	return openExisting[ProgressStore](ctx, spec, true)
}

func openExisting[T any](ctx context.Context, spec Spec, progress bool) (T, bool, error) {
	var none T
	b, err := Lookup(spec.Scheme)
	if err != nil || b.Existing == nil {
		return none, false, nil
	}
	s, ok, err := b.Existing(ctx, spec, progress)
	if !ok || err != nil {
		return none, false, err
	}
	return s.(T), true, nil
}

// FlushPolicy says when the BigQuery write step appends what one (table,
// shard) buffered: at a clock tick after Interval, at MaxRows rows or MaxBytes
// bytes, and at the end of a bounded input, so the append rate does not follow
// the bundle rate (docs/bigquery.md). Shards is the keys (concurrent appends) per table.
type FlushPolicy struct {
	Interval          time.Duration
	MaxRows, MaxBytes int64
	Shards            int
	// Clock drives an unbounded input's flushes by an impulse every Interval:
	// the portable Flink runner fires no processing-time timers for Go. A
	// bounded input has none (it would hold the job open).
	Clock bool
}

// DefaultFlushPolicy flushes every 5 s, at 50,000 rows or at 8 MB (an
// AppendRows request's bound under the service's 10 MB), over 2 shards a table.
var DefaultFlushPolicy = FlushPolicy{Interval: 5 * time.Second, MaxRows: 50_000, MaxBytes: 8 << 20, Shards: 2}

// MaxDelay is the longest a row the write step has buffered (and counted)
// waits for its append while the clock ticks: the tick after it arrives seals
// it and the next one appends it, since a batch is appended only from state a
// bundle committed. Whoever waits for the output to settle on the write
// counters (the launcher's stop and seal) waits at least this long.
func (p FlushPolicy) MaxDelay() time.Duration { return 2 * p.Interval }

// Validate refuses a policy that would flush never or all the time.
func (p FlushPolicy) Validate() error {
	switch {
	case p.Interval < 10*time.Millisecond || p.Interval > time.Hour:
		return fmt.Errorf("bigquery flush interval %v: want 10ms to 1h", p.Interval)
	case p.MaxRows < 1 || p.MaxBytes < 1:
		return fmt.Errorf("bigquery flush size %d rows / %d bytes: want both positive", p.MaxRows, p.MaxBytes)
	case p.Shards < 1 || p.Shards > 64:
		return fmt.Errorf("bigquery shards %d: want 1 to 64", p.Shards)
	}
	return nil
}
