package bigquery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// appendRequestBytes bounds one AppendRows request's rows under the service's
// 10 MB (schema and framing travel too); tests lower maxAppendBytes.
const appendRequestBytes = 8 << 20

var maxAppendBytes = appendRequestBytes

// appender is the Storage Write API as the write step uses it: committed
// streams and appends at explicit offsets.
type appender interface {
	CreateStream(ctx context.Context, table string) (string, error)
	// Append writes rows to stream at offset in one request; rows already
	// stored there are reported as errAlreadyStored.
	Append(ctx context.Context, table, stream string, offset int64, rows [][]byte) error
}

// errAlreadyStored is ALREADY_EXISTS for an offset: the same rows, since no
// other batch is ever sealed there (sealedBatch), so the append is done.
var errAlreadyStored = errors.New("rows already stored at this offset")

// retryableAppend reports whether a failed request may succeed when retried:
// quotas, overload, deadlines, and UNKNOWN (the emulator's failed database
// connection).
func retryableAppend(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	switch codeOf(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.Internal, codes.Aborted, codes.DeadlineExceeded, codes.Unknown:
		return true
	}
	return false
}

// codeOf is the gRPC code of err, also when wrapped.
func codeOf(err error) codes.Code { return statusOf(err).Code() }

func statusOf(err error) *status.Status {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus()
	}
	return status.Convert(err)
}

// streamGone reports whether an append failed because its stream takes no
// more rows: BigQuery finalizes and garbage-collects committed streams left
// idle (Beam Java's BigQueryIO then moves to a new stream too). The service's
// StorageError detail names the cause; without one, NOT_FOUND and
// FAILED_PRECONDITION are a lost stream. A missing table is not.
func streamGone(err error) bool {
	st := statusOf(err)
	for _, d := range st.Details() {
		if e, ok := d.(*storagepb.StorageError); ok {
			switch e.GetCode() {
			case storagepb.StorageError_STREAM_NOT_FOUND, storagepb.StorageError_STREAM_FINALIZED, storagepb.StorageError_INVALID_STREAM_STATE:
				return true
			}
			return false
		}
	}
	return st.Code() == codes.NotFound || st.Code() == codes.FailedPrecondition
}

// appendSealed appends a sealed batch in requests of at most maxAppendBytes
// at explicit offsets, retrying transient failures, and returns the requests
// sent. Only when the service took every request as new rows is the stream's
// end known: then the stream goes back to pool.
func appendSealed(ctx context.Context, app appender, pool *streamPool, table string, sb sealedBatch,
	sleep func(context.Context, time.Duration) error) (requests int, err error) {
	fresh := true
	offset := sb.Offset
	for lo := 0; lo < len(sb.Rows); {
		hi, size := lo, 0
		for hi < len(sb.Rows) && (hi == lo || size+len(sb.Rows[hi]) <= maxAppendBytes) {
			size += len(sb.Rows[hi])
			hi++
		}
		chunk := sb.Rows[lo:hi]
		// A failed request may have landed: the retry then reads
		// ALREADY_EXISTS, and the stream is not reused.
		n, err := bqRetry(retryableAppend, sleep, slog.LevelWarn, "bigquery sink: append failed, retrying", "table", table, "offset", offset).Do(ctx, func() error {
			err := app.Append(ctx, table, sb.Stream, offset, chunk)
			if errors.Is(err, errAlreadyStored) {
				fresh = false
				return nil
			}
			return err
		})
		requests += n
		if err != nil {
			return requests, fmt.Errorf("bigquery sink: append %d rows to %s (stream %s, offset %d): %w", len(chunk), table, sb.Stream, offset, err)
		}
		if afterAppend != nil {
			if err := afterAppend(table, offset, len(chunk)); err != nil {
				return requests, err
			}
		}
		offset += int64(len(chunk))
		lo = hi
	}
	if fresh {
		pool.put(table, sb.Stream, offset)
	}
	return requests, nil
}

// afterAppend, set by tests, runs after each successful append request.
var afterAppend func(table string, offset int64, rows int) error

// writeAPI is the appender over the Storage Write API (managedwriter).
type writeAPI struct {
	client           *managedwriter.Client
	project, dataset string
	emulator         bool // declare the emulator's row types (see bqRowType)
}

func (w *writeAPI) parent(table string) string {
	return managedwriter.TableParentFromParts(w.project, w.dataset, table)
}

func (w *writeAPI) CreateStream(ctx context.Context, table string) (string, error) {
	var name string
	_, err := bqRetry(retryableAppend, nil, slog.LevelDebug, "bigquery sink: retrying", "what", "create write stream").Do(ctx, func() error {
		ws, err := w.client.CreateWriteStream(ctx, &storagepb.CreateWriteStreamRequest{
			Parent:      w.parent(table),
			WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_COMMITTED},
		})
		if err != nil {
			return err
		}
		name = ws.GetName()
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("bigquery sink: create write stream on %s: %w", table, err)
	}
	return name, nil
}

// Append sends one request on its own connection, so that every request
// names its stream and schema: the emulator routes one without a stream name
// to an arbitrary stream.
func (w *writeAPI) Append(ctx context.Context, table, stream string, offset int64, rows [][]byte) error {
	ms, err := w.client.NewManagedStream(ctx, managedwriter.WithStreamName(stream),
		managedwriter.WithSchemaDescriptor(rowTypesFor(w.emulator)[table].proto))
	if err != nil {
		return err
	}
	defer ms.Close()
	res, err := ms.AppendRows(ctx, rows, managedwriter.WithOffset(offset))
	if err == nil {
		_, err = res.GetResult(ctx)
	}
	if codeOf(err) == codes.AlreadyExists {
		return fmt.Errorf("%w: %w", errAlreadyStored, err)
	}
	return err
}

// Committed streams are reused across flushes, as Beam Java's BigQueryIO
// does: a stream per flush would exceed the CreateWriteStream quota
// (docs/bigquery.md, "Streams"). A stream retires after streamMaxAge, or
// streamMaxIdle without writes (the service may reclaim idle streams).
const (
	streamMaxAge  = time.Hour
	streamMaxIdle = 10 * time.Minute
)

// streamPool caches, per table, streams whose end this process knows (put
// after an append of new rows, taken once to seal the next batch there), so
// an ALREADY_EXISTS can only be that batch's own retry, even under restored
// checkpoints. A nil pool keeps nothing: a new stream per batch.
type streamPool struct {
	now func() time.Time

	mu   sync.Mutex
	free map[string][]openStream // by table
	born map[string]time.Time
}

// openStream is a stream and its end, as this process wrote it.
type openStream struct {
	Name    string
	End     int64
	Written time.Time
}

func newStreamPool(now func() time.Time) *streamPool {
	return &streamPool{now: now, free: map[string][]openStream{}, born: map[string]time.Time{}}
}

// take removes and returns a stream of table, retiring old and idle ones.
func (p *streamPool) take(table string) (openStream, bool) {
	if p == nil {
		return openStream{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	// Kept longer, so a stream out in a sealed batch keeps its age.
	maps.DeleteFunc(p.born, func(_ string, t time.Time) bool { return now.Sub(t) >= 2*streamMaxAge })
	free := p.free[table]
	for len(free) > 0 {
		s := free[len(free)-1]
		free = free[:len(free)-1]
		if now.Sub(p.born[s.Name]) < streamMaxAge && now.Sub(s.Written) < streamMaxIdle {
			p.free[table] = free
			return s, true
		}
	}
	p.free[table] = free
	return openStream{}, false
}

// created notes a stream this process created.
func (p *streamPool) created(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.born[name] = p.now()
}

// put offers a stream this process just appended to, as new rows, up to end.
func (p *streamPool) put(table, name string, end int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if _, ok := p.born[name]; !ok {
		// Sealed elsewhere or before a restart: its age counts from here.
		p.born[name] = now
	}
	p.free[table] = append(p.free[table], openStream{Name: name, End: end, Written: now})
}

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

// flushStep appends the sealed batch, then seals what is buffered at a
// pooled stream's end or into a new stream. Sealing and appending are in
// different bundles so that the append only reads a committed batch; a row
// waits at most two steps. A key that sealed in this bundle (sealedHere) has
// nothing to do until the next, so its step reads no state: a bundle far over
// the batch size reads its buffer once, not once per row.
func flushStep(ctx context.Context, st batchStore, app appender, pool *streamPool, table string, sealedHere bool,
	sleep func(context.Context, time.Duration) error) (flushResult, error) {
	var res flushResult
	if sealedHere {
		res.Pending = true
		return res, nil
	}
	sb, sealed, err := st.Sealed()
	if err != nil {
		return res, err
	}
	if sealed {
		res.Requests, err = appendSealed(ctx, app, pool, table, sb, sleep)
		if streamGone(err) {
			// Sealed before a long stop or a restored savepoint, at a stream
			// the service has since finalized: the rows are sealed again at
			// another stream and appended at the next step. Rows an attempt
			// appended to the lost stream are then stored twice, and every
			// read keeps one row per (key, revision) and one audit row per
			// source_position.
			slog.Warn("bigquery sink: a sealed batch's stream takes no more rows; sealing the batch at another stream",
				"table", table, "stream", sb.Stream, "offset", sb.Offset, "rows", len(sb.Rows), "error", err)
			if sb, err = seal(ctx, app, pool, table, sb.Rows); err == nil {
				err = st.Seal(sb)
			}
			res.Sealed, res.Pending = err == nil, true
			return res, err
		}
		if err != nil {
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
