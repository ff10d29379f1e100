package bigquery

import (
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// sealedBatch is a flush's rows bound to a stream and offset. It is stored in
// state in one bundle and appended in a later one, so every retry sends the
// same rows to the same offsets and the service's ALREADY_EXISTS means they
// are stored. A restored job seals anew where no batch was sealed (streamPool),
// so nothing of it is dropped as "already stored".
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
	// Last: a batch sealed before offsets existed decodes with offset 0.
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

// batchStore is a key's state in the write step: the buffered rows and the
// sealed batch, in Beam state (beamStore; the tests keep one in memory).
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

// onRow buffers a row and takes a flush step at the size limits. first says
// the buffer was empty: the DoFn then arms its end-of-input timer.
func onRow(ctx context.Context, st batchStore, app appender, pool *streamPool, table string, row []byte, p sink.FlushPolicy, sealedHere bool,
	sleep func(context.Context, time.Duration) error) (first bool, res flushResult, err error) {
	rows, bytes, err := st.Buffer(row)
	if err != nil || (rows < p.MaxRows && bytes < p.MaxBytes) {
		return rows == 1, flushResult{Pending: true}, err
	}
	res, err = flushStep(ctx, st, app, pool, table, sealedHere, sleep)
	return rows == 1, res, err
}

// flushStep appends the sealed batch unless it was sealed in this bundle
// (sealedHere), then seals what is buffered at a pooled stream's end or into
// a new stream. Sealing and appending are in different bundles so that the
// append only reads a committed batch; a row waits at most two steps.
func flushStep(ctx context.Context, st batchStore, app appender, pool *streamPool, table string, sealedHere bool,
	sleep func(context.Context, time.Duration) error) (flushResult, error) {
	var res flushResult
	sb, sealed, err := st.Sealed()
	if err != nil {
		return res, err
	}
	if sealed && !sealedHere {
		if res.Requests, err = appendSealed(ctx, app, pool, table, sb, sleep); err != nil {
			return res, err
		}
		res.Appended = len(sb.Rows)
		if err := st.ClearSealed(); err != nil {
			return res, err
		}
		sealed = false
	}
	rows, err := st.Buffered()
	if err != nil {
		return res, err
	}
	if !sealed && len(rows) > 0 {
		next, err := seal(ctx, app, pool, table, rows)
		if err != nil {
			return res, err
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

// seal binds rows to a pooled stream's end, or to a new stream.
func seal(ctx context.Context, app appender, pool *streamPool, table string, rows [][]byte) (sealedBatch, error) {
	sb := sealedBatch{Rows: rows}
	if s, ok := pool.take(table); ok {
		sb.Stream, sb.Offset = s.Name, s.End
		return sb, nil
	}
	var err error
	if sb.Stream, err = app.CreateStream(ctx, table); err != nil {
		return sb, err
	}
	pool.created(sb.Stream)
	return sb, nil
}
