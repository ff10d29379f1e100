package sinks

import (
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/coders"
)

// FlushPolicy says when the BigQuery write step appends what it buffered for
// one (table, shard): on the first clock tick after Interval (when the input
// is unbounded), as soon as MaxRows rows or MaxBytes bytes wait, and at the
// end of a bounded input. The number of append calls per table is then
// bounded by shards × (1/Interval + row rate/MaxRows + byte rate/MaxBytes),
// whatever the runner's bundle rate (docs/bigquery.md).
type FlushPolicy struct {
	Interval time.Duration
	MaxRows  int64
	MaxBytes int64
	// Shards is how many keys each table's rows are spread over: the
	// number of appends that may run at once per table.
	Shards int
	// Clock ticks every Interval drive the flushes of an unbounded input
	// (a follower, a subscription): a periodic impulse, which every runner
	// runs like any source, not processing-time timers, which the portable
	// Flink runner does not fire for Go. A bounded input has no clock (it
	// would hold the job open); it flushes at the size limits and at its
	// end.
	Clock bool
}

// DefaultFlushPolicy flushes every 5 s, at 50,000 rows or at 8 MB, over 2
// shards per table.
var DefaultFlushPolicy = FlushPolicy{Interval: 5 * time.Second, MaxRows: 50_000, MaxBytes: appendRequestBytes, Shards: 2}

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

// sealedBatch is a flush's rows bound to the stream and offset they go to.
// It is written to the runner's state in one bundle and appended in a later
// one, so every attempt at the append (a retried bundle, a retried request)
// sends the same rows to the same stream at the same offsets: the Storage
// Write API answers ALREADY_EXISTS for rows it already has, and a retry can
// only repeat a write, never change it. The stream is a new one or, at
// Offset, the end of one this process wrote last (streamPool, which says
// why no other rows can be there). A job restored from an older checkpoint
// seals anew, into a new stream or at an end no batch was ever sealed at:
// no offset of it can collide with rows of the lost timeline, so nothing is
// dropped as "already stored".
type sealedBatch struct {
	Stream string
	Offset int64
	Rows   [][]byte
}

func (sb sealedBatch) encode() []byte {
	w := coders.Writer{}
	w.String(sb.Stream)
	w.Varint(int64(len(sb.Rows)))
	for _, r := range sb.Rows {
		w.String(string(r))
	}
	// Last, so that a batch sealed before offsets existed (none: offset
	// 0) still decodes.
	w.Varint(sb.Offset)
	return w.B
}

func decodeSealed(b []byte) (sealedBatch, error) {
	r := coders.Reader{B: b}
	sb := sealedBatch{Stream: r.String()}
	n := r.Varint()
	for i := int64(0); i < n && r.Err == nil; i++ {
		sb.Rows = append(sb.Rows, []byte(r.String()))
	}
	if r.Err == nil && len(r.B) > 0 {
		sb.Offset = r.Varint()
	}
	if r.Err != nil {
		return sealedBatch{}, fmt.Errorf("bigquery sink: decode sealed batch: %w", r.Err)
	}
	return sb, nil
}

// batchStore is the per-key state of the write step: the buffered rows and
// their size, and the sealed batch. The DoFn keeps it in Beam state; the
// tests keep it in memory.
type batchStore interface {
	Buffer(row []byte) (rows, bytes int64, err error)
	Buffered() ([][]byte, error)
	ClearBuffer() error
	Sealed() (sealedBatch, bool, error)
	Seal(sealedBatch) error
	ClearSealed() error
}

// flushResult says what one flush step did.
type flushResult struct {
	Appended int  // rows of the sealed batch appended
	Requests int  // append requests sent
	Sealed   bool // a batch was sealed by this step: it appends at a later one
	Pending  bool // rows still wait, sealed or buffered
}

// onRow buffers a row and, once the buffer reaches the size limits, takes
// a flush step at once (sealedHere as for flushStep). It reports whether the
// row is the first of an empty buffer, for which the DoFn arms its
// end-of-input timer.
func onRow(ctx context.Context, st batchStore, app appender, pool *streamPool, table string, row []byte, p FlushPolicy, sealedHere bool,
	sleep func(context.Context, time.Duration) error) (first bool, res flushResult, err error) {
	rows, bytes, err := st.Buffer(row)
	if err != nil || (rows < p.MaxRows && bytes < p.MaxBytes) {
		return rows == 1, flushResult{Pending: true}, err
	}
	res, err = flushStep(ctx, st, app, pool, table, sealedHere, sleep)
	return rows == 1, res, err
}

// flushStep is one step of a key's flush, taken at a clock tick, at the size
// limits and at the end of the input. It appends the sealed batch unless
// that batch was sealed in the current bundle (sealedHere), then, when no
// batch is sealed, seals what is buffered: at the end of a stream of the
// pool (nil: none) or into a new committed stream. An appended batch whose
// every request the service took as new rows goes back to the pool.
// Sealing and appending happen in different bundles on purpose: the append
// only ever reads a batch the runner has committed, so a retried bundle
// repeats the same rows at the same offsets of the same stream. A row thus
// waits at most two steps: the one that seals it and the next.
func flushStep(ctx context.Context, st batchStore, app appender, pool *streamPool, table string, sealedHere bool,
	sleep func(context.Context, time.Duration) error) (flushResult, error) {
	var res flushResult
	sb, sealed, err := st.Sealed()
	if err != nil {
		return res, err
	}
	if sealed && !sealedHere {
		n, fresh, err := appendSealed(ctx, app, table, sb, sleep)
		res.Requests = n
		if err != nil {
			return res, err
		}
		res.Appended = len(sb.Rows)
		if err := st.ClearSealed(); err != nil {
			return res, err
		}
		if fresh {
			pool.put(table, sb.Stream, sb.Offset+int64(len(sb.Rows)))
		}
		sealed = false
	}
	rows, err := st.Buffered()
	if err != nil {
		return res, err
	}
	if !sealed && len(rows) > 0 {
		next := sealedBatch{Rows: rows}
		if s, ok := pool.take(table); ok {
			next.Stream, next.Offset = s.Name, s.End
		} else {
			if next.Stream, err = app.CreateStream(ctx, table); err != nil {
				return res, err
			}
			pool.created(next.Stream)
		}
		if err := st.Seal(next); err != nil {
			return res, err
		}
		if err := st.ClearBuffer(); err != nil {
			return res, err
		}
		res.Sealed, sealed, rows = true, true, nil
	}
	res.Pending = sealed || len(rows) > 0
	return res, nil
}

// memStore is a batchStore in memory, for the plain-Go callers (BigQuery.Write
// and the tests).
type memStore struct {
	rows   [][]byte
	bytes  int64
	sealed *sealedBatch
}

func (m *memStore) Buffer(row []byte) (int64, int64, error) {
	m.rows = append(m.rows, row)
	m.bytes += int64(len(row))
	return int64(len(m.rows)), m.bytes, nil
}
func (m *memStore) Buffered() ([][]byte, error) { return m.rows, nil }
func (m *memStore) ClearBuffer() error          { m.rows, m.bytes = nil, 0; return nil }
func (m *memStore) Sealed() (sealedBatch, bool, error) {
	if m.sealed == nil {
		return sealedBatch{}, false, nil
	}
	return *m.sealed, true, nil
}
func (m *memStore) Seal(sb sealedBatch) error { m.sealed = &sb; return nil }
func (m *memStore) ClearSealed() error        { m.sealed = nil; return nil }
