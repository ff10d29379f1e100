package bigquery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
func codeOf(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return status.Code(err)
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
