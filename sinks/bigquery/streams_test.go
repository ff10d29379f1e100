package bigquery

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// keyRun is one key of the write step in one process: its state (st) and
// the process's stream pool, against a write service shared by all.
type keyRun struct {
	t    *testing.T
	st   *memStore
	pool *streamPool
	api  appender
}

// buffer adds rows to the key's buffer, below the size limits.
func (k keyRun) buffer(rows [][]byte) {
	k.t.Helper()
	for _, r := range rows {
		if _, _, err := onRow(context.Background(), k.st, k.api, k.pool, table.HourlyRevenueChangelog.Name, r, sink.DefaultFlushPolicy, false, noSleep); err != nil {
			k.t.Fatal(err)
		}
	}
}

// step takes one flush step in a bundle of its own.
func (k keyRun) step() flushResult {
	k.t.Helper()
	res, err := flushStep(context.Background(), k.st, k.api, k.pool, table.HourlyRevenueChangelog.Name, false, noSleep)
	if err != nil {
		k.t.Fatal(err)
	}
	return res
}

// checkpoint is a copy of the key's state, as a runner's checkpoint holds it.
func checkpoint(st *memStore) *memStore {
	return &memStore{rows: slices.Clone(st.rows), bytes: st.bytes, sealed: st.sealed}
}

// holds reports the rows of want missing from the table.
func missing(fake *fakeWrite, want [][]byte) int {
	stored := fake.rows(table.HourlyRevenueChangelog.Name)
	n := 0
	for _, w := range want {
		if !slices.ContainsFunc(stored, func(s []byte) bool { return bytes.Equal(s, w) }) {
			n++
		}
	}
	return n
}

func wallPool() *streamPool { return newStreamPool(time.Now) }

// TestBigQueryStreamReusedAcrossFlushes: a key's batches go one after the
// other into one committed stream, each at the end of the last.
func TestBigQueryStreamReusedAcrossFlushes(t *testing.T) {
	rows := changelogRows(t, 9)
	fake, api := startFakeWrite(t)
	k := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
	for i := 0; i < len(rows); i += 3 {
		k.buffer(rows[i : i+3])
		if res := k.step(); !res.Sealed || res.Appended != 0 {
			t.Fatalf("batch %d: %+v; want it sealed", i/3, res)
		}
		if got := k.st.sealed.Offset; got != int64(i) {
			t.Fatalf("batch %d sealed at offset %d, want %d (the stream's end)", i/3, got, i)
		}
		if res := k.step(); res.Appended != 3 || res.Pending {
			t.Fatalf("batch %d: %+v; want it appended", i/3, res)
		}
	}
	sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
	if n := fake.calls[table.HourlyRevenueChangelog.Name]["CreateWriteStream"]; n != 1 {
		t.Errorf("%d streams created for 3 flushes, want 1", n)
	}
	if fake.alreadyExists != 0 {
		t.Errorf("%d appends refused as already stored", fake.alreadyExists)
	}
}

// TestBigQueryRetriedFlushOnReusedStream is TestBigQueryRetriedFlushRepeatsNothing
// at an offset past 0 of a reused stream: the retry repeats the batch at its
// offsets, adds each row once, and, having met ALREADY_EXISTS, does not
// offer the stream again (this process no longer knows who wrote its end).
func TestBigQueryRetriedFlushOnReusedStream(t *testing.T) {
	rows := changelogRows(t, 60)
	defer func(n int) { maxAppendBytes = n }(maxAppendBytes)
	maxAppendBytes = 20 * len(rows[0])
	fake, api := startFakeWrite(t)
	k := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
	k.buffer(rows[:10])
	k.step()
	k.step() // appended: the stream ends at 10
	k.buffer(rows[10:])
	if res := k.step(); !res.Sealed || k.st.sealed.Offset != 10 {
		t.Fatalf("%+v at offset %d; want sealed at 10", res, k.st.sealed.Offset)
	}
	committed := checkpoint(k.st)

	failed := errors.New("worker lost after a partial write")
	afterAppend = func(_ string, offset int64, _ int) error {
		if offset == 10 {
			return failed
		}
		return nil
	}
	defer func() { afterAppend = nil }()
	if _, err := flushStep(context.Background(), k.st, api, k.pool, table.HourlyRevenueChangelog.Name, false, noSleep); !errors.Is(err, failed) {
		t.Fatalf("first attempt: %v, want the injected failure", err)
	}
	afterAppend = nil

	k.st = committed
	if res := k.step(); res.Appended != 50 {
		t.Fatalf("retry: %+v", res)
	}
	sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
	if fake.alreadyExists != 1 {
		t.Errorf("%d appends refused as already stored, want 1", fake.alreadyExists)
	}
	if n := k.pool.held(table.HourlyRevenueChangelog.Name); n != 0 {
		t.Errorf("the pool offers %d streams after an ALREADY_EXISTS, want none", n)
	}
}

// TestBigQueryRestoredCheckpointLosesNothing is a runner (Flink) restoring
// an older checkpoint while streams are reused, in the ways a key's state
// and a process's pool can then disagree. In each, the rows of the
// restored timeline must all be stored (the lost timeline's stay too; the
// reads keep one per key and revision).
func TestBigQueryRestoredCheckpointLosesNothing(t *testing.T) {
	rows := changelogRows(t, 40)
	b0, b1, b2, extra := rows[:5], rows[5:10], rows[10:15], rows[15:20]

	t.Run("same process, sealed batch restored", func(t *testing.T) {
		fake, api := startFakeWrite(t)
		a := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
		a.buffer(b1)
		a.step() // sealed b1 at 0
		restored := checkpoint(a.st)
		a.step() // b1 appended, the stream offered at 5
		a.buffer(b2)
		a.step() // b2 sealed at 5
		a.step() // b2 appended, the stream offered at 10

		a.st = restored
		a.buffer(extra) // after the restore, other rows arrive
		a.step()        // b1 again: ALREADY_EXISTS; extra sealed at 10
		a.step()
		if n := missing(fake, append(slices.Clone(b1), extra...)); n != 0 {
			t.Fatalf("%d rows of the restored timeline missing", n)
		}
	})

	t.Run("key moved to another process and back", func(t *testing.T) {
		fake, api := startFakeWrite(t)
		a := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
		a.buffer(b0)
		a.step()
		a.step() // b0 appended: a's pool offers the stream at 5
		a.buffer(b1)
		restored, restoredOnB := checkpoint(a.st), checkpoint(a.st) // b1 buffered, nothing sealed
		a.step()                                                    // b1 sealed at 5 (taken from a's pool)
		// The key moves to process b, which appends b1 and goes on.
		b := keyRun{t: t, st: a.st, pool: wallPool(), api: api}
		b.step()
		b.buffer(b2)
		b.step()
		b.step()

		// Restored, the key comes back to a: its buffer now differs
		// from the b1 sealed before, so nothing of it may be taken for
		// stored.
		a.st = restored
		a.buffer(extra)
		a.step()
		a.step()
		if n := missing(fake, append(slices.Clone(b1), extra...)); n != 0 {
			t.Fatalf("%d rows of the restored timeline missing", n)
		}
		// Restored on b instead, whose pool knows the stream's real end.
		b.st = restoredOnB
		b.buffer(extra)
		b.step()
		if at := b.st.sealed.Offset; at != 15 {
			t.Errorf("restored on b: sealed at %d, want 15 (the end b wrote)", at)
		}
		b.step()
		if n := missing(fake, append(slices.Clone(b1), extra...)); n != 0 {
			t.Fatalf("restored on b: %d rows of the restored timeline missing", n)
		}
	})

	// The negative control: a pool that kept an entry after a batch was
	// sealed at it (a cache of "where the stream ends" that is not
	// consumed) loses the restored rows: sealed again at the same offset,
	// they read ALREADY_EXISTS and count as done.
	t.Run("control: an entry not consumed at seal loses rows", func(t *testing.T) {
		fake, api := startFakeWrite(t)
		a := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
		a.buffer(b0)
		a.step()
		a.step()
		a.buffer(b1)
		restored := checkpoint(a.st)
		a.step() // b1 sealed at 5
		stream := a.st.sealed.Stream
		b := keyRun{t: t, st: a.st, pool: wallPool(), api: api}
		b.step()                                                 // b1 appended by b
		a.pool.put(table.HourlyRevenueChangelog.Name, stream, 5) // what an unconsumed entry says

		a.st = restored
		a.buffer(extra)
		a.step()
		a.step()
		if n := missing(fake, extra); n == 0 {
			t.Fatal("the control lost no row: the test no longer shows what consuming the entry prevents")
		}
	})
}

// TestStreamPoolRetires: a pool offers a stream while it is younger than
// streamMaxAge and was written within streamMaxIdle, by the pool's clock.
func TestStreamPoolRetires(t *testing.T) {
	var now time.Duration
	p := simulatedPool(&now)
	p.created("s1")
	p.put(table.HourlyRevenueChangelog.Name, "s1", 10)
	if s, ok := p.take(table.HourlyRevenueChangelog.Name); !ok || s.Name != "s1" || s.End != 10 {
		t.Fatalf("take = %+v %v; want s1 at 10", s, ok)
	}
	if _, ok := p.take(table.HourlyRevenueChangelog.Name); ok {
		t.Fatal("a stream taken twice")
	}
	// Written every 5 s, it serves until an hour after its creation.
	for now = 5 * time.Second; now < streamMaxAge; now += 5 * time.Second {
		p.put(table.HourlyRevenueChangelog.Name, "s1", int64(now/time.Second))
		if _, ok := p.take(table.HourlyRevenueChangelog.Name); !ok {
			t.Fatalf("retired after %v", now)
		}
	}
	p.put(table.HourlyRevenueChangelog.Name, "s1", 1)
	if _, ok := p.take(table.HourlyRevenueChangelog.Name); ok {
		t.Fatalf("still offered %v after its creation", now)
	}
	// Idle for streamMaxIdle: retired.
	p.created("s2")
	p.put(table.HourlyRevenueChangelog.Name, "s2", 1)
	now += streamMaxIdle
	if _, ok := p.take(table.HourlyRevenueChangelog.Name); ok {
		t.Fatal("offered after being idle for streamMaxIdle")
	}
	// Per table.
	p.created("s3")
	p.put(table.TooLateEvents.Name, "s3", 1)
	if _, ok := p.take(table.HourlyRevenueChangelog.Name); ok {
		t.Fatal("a too_late_events stream offered for the changelog")
	}
	// No pool: never an entry.
	var none *streamPool
	none.put(table.HourlyRevenueChangelog.Name, "s4", 1)
	if _, ok := none.take(table.HourlyRevenueChangelog.Name); ok {
		t.Fatal("a nil pool offered a stream")
	}
}

// A sealed batch keeps its offset in state; one sealed before offsets were
// kept decodes at offset 0.
func TestSealedBatchEncoding(t *testing.T) {
	sb := sealedBatch{Stream: "s", Offset: 1234, Rows: [][]byte{[]byte("a"), []byte("bc")}}
	got, err := decodeSealed(sb.encode())
	if err != nil || got.Stream != "s" || got.Offset != 1234 || len(got.Rows) != 2 || string(got.Rows[1]) != "bc" {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	w := coders.Writer{}
	w.String("old")
	w.Varint(1)
	w.String("row")
	got, err = decodeSealed(w.B)
	if err != nil || got.Stream != "old" || got.Offset != 0 || len(got.Rows) != 1 {
		t.Fatalf("decode of the old format = %+v, %v", got, err)
	}
}

// held is how many streams the pool offers for table.
func (p *streamPool) held(tbl string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free[tbl])
}

// memStore is a batchStore in memory.
type memStore struct {
	rows   [][]byte
	bytes  int64
	sealed *sealedBatch
	// read counts the rows every Buffered and Sealed call handed out, as
	// Beam state hands out (and the sealed batch decodes) each row per read.
	read int
}

func (m *memStore) Buffer(row []byte) (int64, int64, error) {
	m.rows = append(m.rows, row)
	m.bytes += int64(len(row))
	return int64(len(m.rows)), m.bytes, nil
}
func (m *memStore) Buffered() ([][]byte, error) { m.read += len(m.rows); return m.rows, nil }
func (m *memStore) ClearBuffer() error          { m.rows, m.bytes = nil, 0; return nil }
func (m *memStore) Sealed() (sealedBatch, bool, error) {
	if m.sealed == nil {
		return sealedBatch{}, false, nil
	}
	m.read += len(m.sealed.Rows)
	return *m.sealed, true, nil
}
func (m *memStore) Seal(sb sealedBatch) error { m.sealed = &sb; return nil }
func (m *memStore) ClearSealed() error        { m.sealed = nil; return nil }

// TestBigQuerySealedBatchOutlivesItsStream is a batch sealed before a long
// stop (or kept in a restored savepoint) at a stream the service has since
// finalized or dropped: the step seals its rows again at another stream and
// the next step appends them, where every retry failed before. Other
// refusals still fail the step.
func TestBigQuerySealedBatchOutlivesItsStream(t *testing.T) {
	ctx := context.Background()
	name := table.HourlyRevenueChangelog.Name
	for _, tc := range []struct {
		name   string
		code   codes.Code
		detail storagepb.StorageError_StorageErrorCode
		gone   bool
	}{
		{"finalized", codes.InvalidArgument, storagepb.StorageError_STREAM_FINALIZED, true},
		{"garbage-collected", codes.NotFound, storagepb.StorageError_STREAM_NOT_FOUND, true},
		{"invalid state", codes.FailedPrecondition, storagepb.StorageError_INVALID_STREAM_STATE, true},
		{"not found without detail", codes.NotFound, storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED, true},
		{"table not found", codes.NotFound, storagepb.StorageError_TABLE_NOT_FOUND, false},
		{"invalid argument without detail", codes.InvalidArgument, storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := changelogRows(t, 30)
			fake, api := startFakeWrite(t)
			k := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
			k.buffer(rows)
			k.step()
			lost := k.st.sealed.Stream
			fake.end(t, lost, tc.code, tc.detail)
			res, err := flushStep(ctx, k.st, api, k.pool, name, false, noSleep)
			if !tc.gone {
				if codeOf(err) != tc.code || res.Sealed {
					t.Fatalf("%+v, %v; want the step to fail with %v", res, err, tc.code)
				}
				return
			}
			if err != nil || !res.Sealed || res.Appended != 0 || k.st.sealed.Stream == lost {
				t.Fatalf("%+v, %v, sealed at %s; want the batch sealed again at another stream than %s", res, err, k.st.sealed.Stream, lost)
			}
			if res := k.step(); res.Appended != len(rows) || res.Pending {
				t.Fatalf("next step: %+v; want all %d rows appended", res, len(rows))
			}
			sameRows(t, fake.rows(name), rows)
		})
	}

	// The stream ends between two requests of one batch: the rows of the
	// first are then stored twice (reads keep one per key and revision),
	// and none is lost.
	t.Run("ended mid-batch", func(t *testing.T) {
		rows := changelogRows(t, 30)
		defer func(n int) { maxAppendBytes = n }(maxAppendBytes)
		maxAppendBytes = 10 * len(rows[0])
		fake, api := startFakeWrite(t)
		k := keyRun{t: t, st: &memStore{}, pool: wallPool(), api: api}
		k.buffer(rows)
		k.step()
		lost := k.st.sealed.Stream
		first := 0
		afterAppend = func(_ string, _ int64, n int) error {
			first = n
			fake.end(t, lost, codes.InvalidArgument, storagepb.StorageError_STREAM_FINALIZED)
			return nil
		}
		defer func() { afterAppend = nil }()
		if res := k.step(); !res.Sealed || res.Requests != 2 {
			t.Fatalf("%+v; want two requests, the second refused, and the batch sealed again", res)
		}
		afterAppend = nil
		k.step()
		stored := fake.rows(name)
		if n := missing(fake, rows); n != 0 || first == 0 || len(stored) != len(rows)+first {
			t.Fatalf("%d rows stored, %d of the batch missing; want all %d and the first request's %d again", len(stored), n, len(rows), first)
		}
	})
}
