package sinks

import (
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/coders"
)

// FlushPolicy says when the BigQuery write step appends what it buffered for
// one (table, shard): after Interval, or as soon as MaxRows rows or MaxBytes
// bytes wait, whichever comes first. The number of append calls per table
// is then bounded by shards × (1/Interval + row rate/MaxRows + byte
// rate/MaxBytes), whatever the runner's bundle rate (docs/bigquery.md).
type FlushPolicy struct {
	Interval time.Duration
	MaxRows  int64
	MaxBytes int64
	// Shards is how many keys each table's rows are spread over: the
	// number of appends that may run at once per table.
	Shards int
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

// sealedBatch is a flush's rows bound to the stream they go to. It is
// written to the runner's state in one bundle and appended in a later one,
// so every attempt at the append (a retried bundle, a retried request)
// sends the same rows to the same stream at the same offsets: the Storage
// Write API answers ALREADY_EXISTS for rows it already has, and a retry can
// only repeat a write, never change it. A job restored from an older
// checkpoint seals anew into a new stream: no offset of it can collide with
// rows of the lost timeline, so nothing is dropped as "already stored".
type sealedBatch struct {
	Stream string
	Rows   [][]byte
}

func (sb sealedBatch) encode() []byte {
	w := coders.Writer{}
	w.String(sb.Stream)
	w.Varint(int64(len(sb.Rows)))
	for _, r := range sb.Rows {
		w.String(string(r))
	}
	return w.B
}

func decodeSealed(b []byte) (sealedBatch, error) {
	r := coders.Reader{B: b}
	sb := sealedBatch{Stream: r.String()}
	n := r.Varint()
	for i := int64(0); i < n && r.Err == nil; i++ {
		sb.Rows = append(sb.Rows, []byte(r.String()))
	}
	if r.Err != nil {
		return sealedBatch{}, fmt.Errorf("bigquery sink: decode sealed batch: %w", r.Err)
	}
	return sb, nil
}

// batchStore is the per-key state of the write step: the buffered rows and
// their size, the sealed batch, and when the flush timer fires. The DoFn
// keeps it in Beam state; the tests keep it in memory.
type batchStore interface {
	Buffer(row []byte) (rows, bytes int64, err error)
	Buffered() ([][]byte, error)
	ClearBuffer() error
	Sealed() (sealedBatch, bool, error)
	Seal(sealedBatch) error
	ClearSealed() error
	Armed() (time.Time, bool, error)
	Arm(at time.Time) error
	Disarm() error
}

// onRow buffers a row and returns when the flush timer must fire, or the
// zero time when the armed timer stays as it is.
func onRow(st batchStore, row []byte, now time.Time, p FlushPolicy) (time.Time, error) {
	rows, bytes, err := st.Buffer(row)
	if err != nil {
		return time.Time{}, err
	}
	want := now.Add(p.Interval)
	if rows >= p.MaxRows || bytes >= p.MaxBytes {
		want = now
	}
	at, armed, err := st.Armed()
	if err != nil {
		return time.Time{}, err
	}
	if armed && !want.Before(at) {
		return time.Time{}, nil
	}
	return want, st.Arm(want)
}

// flushResult says what one firing of the flush timer did.
type flushResult struct {
	Appended int // rows of the sealed batch appended
	Requests int // append requests sent
	// Again is when to fire once more (the zero time: not armed): right
	// away after sealing, so that the seal is committed before the append.
	Again time.Time
}

// onFlush is one firing of the flush timer. When a batch is sealed (by the
// previous firing) it appends it, and re-arms for what was buffered since:
// at once if that is over the size limits, else an interval later. When
// none is sealed it seals what is buffered into a new committed stream and
// asks to fire again at once. Sealing and appending happen in different
// bundles on purpose: the append only ever reads a batch the runner has
// committed.
func onFlush(ctx context.Context, st batchStore, app appender, table string, now time.Time, p FlushPolicy, sleep func(context.Context, time.Duration) error) (flushResult, error) {
	var res flushResult
	if err := st.Disarm(); err != nil {
		return res, err
	}
	rows, err := st.Buffered()
	if err != nil {
		return res, err
	}
	sb, ok, err := st.Sealed()
	if err != nil {
		return res, err
	}
	if ok {
		n, err := appendSealed(ctx, app, table, sb, sleep)
		res.Requests = n
		if err != nil {
			return res, err
		}
		res.Appended = len(sb.Rows)
		if err := st.ClearSealed(); err != nil {
			return res, err
		}
		if len(rows) == 0 {
			return res, nil
		}
		res.Again = now.Add(p.Interval)
		if size := bytesOf(rows); int64(len(rows)) >= p.MaxRows || size >= p.MaxBytes {
			res.Again = now
		}
		return res, st.Arm(res.Again)
	}
	if len(rows) == 0 {
		return res, nil
	}
	stream, err := app.CreateStream(ctx, table)
	if err != nil {
		return res, err
	}
	if err := st.Seal(sealedBatch{Stream: stream, Rows: rows}); err != nil {
		return res, err
	}
	if err := st.ClearBuffer(); err != nil {
		return res, err
	}
	res.Again = now
	return res, st.Arm(now)
}

func bytesOf(rows [][]byte) int64 {
	var n int64
	for _, r := range rows {
		n += int64(len(r))
	}
	return n
}

// memStore is a batchStore in memory, for the plain-Go callers (BigQuery.Write
// and the tests).
type memStore struct {
	rows   [][]byte
	bytes  int64
	sealed *sealedBatch
	at     time.Time
	armed  bool
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
func (m *memStore) Seal(sb sealedBatch) error       { m.sealed = &sb; return nil }
func (m *memStore) ClearSealed() error              { m.sealed = nil; return nil }
func (m *memStore) Armed() (time.Time, bool, error) { return m.at, m.armed, nil }
func (m *memStore) Arm(at time.Time) error          { m.at, m.armed = at, true; return nil }
func (m *memStore) Disarm() error                   { m.armed = false; return nil }
