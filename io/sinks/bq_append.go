package sinks

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

// appendRequestBytes bounds the rows of one AppendRows request: the service
// refuses requests over 10 MB, and the request carries the schema and
// framing besides the rows.
const appendRequestBytes = 8 << 20

// maxAppendBytes is appendRequestBytes; tests lower it to split a flush
// into several requests.
var maxAppendBytes = appendRequestBytes

// appendAttempts bounds the tries of one AppendRows request that failed
// transiently; the waits grow from 200 ms to a few seconds.
const appendAttempts = 6

// appender is the Storage Write API as the write step uses it: committed
// streams (reused across batches, see streamPool), and appends at
// explicit offsets.
type appender interface {
	// CreateStream creates a committed write stream on table.
	CreateStream(ctx context.Context, table string) (string, error)
	// Append writes rows to stream at offset, as one request. Rows already
	// stored at that offset (a retry of an append whose answer was lost, or
	// of a bundle the runner retried) are reported as errAlreadyStored.
	Append(ctx context.Context, table, stream string, offset int64, rows [][]byte) error
}

// errAlreadyStored is the service's ALREADY_EXISTS for an offset: the rows
// at that offset were written before. Since a sealed batch is fixed in the
// runner's state before its first append, and no other batch is ever
// sealed at its stream and offsets (see sealedBatch, streamPool), they are
// the same rows, and the append counts as done.
var errAlreadyStored = errors.New("rows already stored at this offset")

// retryableAppend reports whether a failed append may succeed when retried:
// quota and rate limits (RESOURCE_EXHAUSTED), a backend or queue that is
// unavailable or overloaded (UNAVAILABLE, INTERNAL, ABORTED), a deadline, or
// an unclassified server error (UNKNOWN: the emulator answers so when one of
// its own database connections failed). Every request here is safe to
// repeat: a stream creation adds at most a stream nothing is written to,
// and an append carries its offset. Anything else (a bad row, a missing
// table, a finalized stream, an offset past the stream's end) cannot heal
// by waiting.
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

// appendSealed appends a sealed batch to its stream in requests of at most
// maxAppendBytes, each at its explicit offset from sb.Offset on, retrying
// transient failures with backoff. A request whose rows are already stored
// counts as done, so a retried flush repeats nothing. It returns the
// requests sent and whether the service took every request as new rows
// (fresh): only then does this process know where the stream ends.
func appendSealed(ctx context.Context, app appender, table string, sb sealedBatch, sleep func(context.Context, time.Duration) error) (requests int, fresh bool, err error) {
	fresh = true
	offset := sb.Offset
	for lo := 0; lo < len(sb.Rows); {
		hi, size := lo, 0
		for hi < len(sb.Rows) && (hi == lo || size+len(sb.Rows[hi]) <= maxAppendBytes) {
			size += len(sb.Rows[hi])
			hi++
		}
		chunk := sb.Rows[lo:hi]
		for attempt := 1; ; attempt++ {
			requests++
			err := app.Append(ctx, table, sb.Stream, offset, chunk)
			if errors.Is(err, errAlreadyStored) {
				fresh = false
				break
			}
			if err == nil {
				break
			}
			if attempt == appendAttempts || !retryableAppend(err) {
				return requests, false, fmt.Errorf("bigquery sink: append %d rows to %s (stream %s, offset %d): %w", len(chunk), table, sb.Stream, offset, err)
			}
			// A failed request may have landed all the same: the retry
			// then reads ALREADY_EXISTS, and the stream is not reused.
			wait := time.Duration(attempt*attempt) * 200 * time.Millisecond
			slog.Warn("bigquery sink: append failed, retrying", "table", table, "offset", offset, "attempt", attempt, "wait", wait, "err", err)
			if err := sleep(ctx, wait); err != nil {
				return requests, false, fmt.Errorf("bigquery sink: append to %s: %w", table, err)
			}
		}
		if afterAppend != nil {
			if err := afterAppend(table, offset, len(chunk)); err != nil {
				return requests, false, err
			}
		}
		offset += int64(len(chunk))
		lo = hi
	}
	return requests, fresh, nil
}

// afterAppend, when set (by tests only), runs after each successful append
// request: a test makes it fail to stop a flush after a partial write.
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
	err := retryTransient(ctx, func() error {
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

// Append opens a managed stream on the named stream, sends one request and
// closes it. One connection per request costs a stream lookup each time
// (bounded, like the appends, by the flush interval); it also keeps every
// request self-describing (stream name and schema), which the emulator the
// tests use needs: it routes a request without a stream name to an
// arbitrary stream.
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

// retryTransient runs try until it succeeds, fails for good, or
// appendAttempts tries failed transiently.
func retryTransient(ctx context.Context, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || attempt == appendAttempts || !retryableAppend(err) {
			return err
		}
		if serr := sleepCtx(ctx, time.Duration(attempt*attempt)*200*time.Millisecond); serr != nil {
			return fmt.Errorf("%w (after %w)", serr, err)
		}
	}
}
