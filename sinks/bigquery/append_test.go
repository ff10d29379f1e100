package bigquery

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func noSleep(context.Context, time.Duration) error { return nil }

// changelogRows encodes n snapshot rows of distinct keys.
func changelogRows(t *testing.T, n int) [][]byte {
	t.Helper()
	at := time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)
	var out [][]byte
	for i := range n {
		r := model.Row{WindowStart: sinktest.T10, WindowEnd: sinktest.T10 + sinktest.Hour, Dims: `{"shop":"` + string(rune('a'+i%26)) + `"}`,
			RevenueMicros: int64(i) * 1_000_000, EventCount: int64(i), Revision: int64(i/26 + 1), State: model.OnTime}
		b, err := encodeRow(bqRowTypes, table.ChangelogCodec, sink.ChangelogEntry{Row: r, WrittenAt: at})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// sealed buffers rows and takes one flush step: the batch is sealed into a
// new stream, nothing appended yet.
func sealed(t *testing.T, app appender, rows [][]byte) *memStore {
	t.Helper()
	st := &memStore{}
	for _, r := range rows {
		if _, _, err := onRow(context.Background(), st, app, nil, table.HourlyRevenueChangelog.Name, r, sink.DefaultFlushPolicy, false, noSleep); err != nil {
			t.Fatal(err)
		}
	}
	res, err := flushStep(context.Background(), st, app, nil, table.HourlyRevenueChangelog.Name, false, noSleep)
	if err != nil || res.Appended != 0 || !res.Sealed || !res.Pending {
		t.Fatalf("seal: %+v, %v; want a batch sealed, nothing appended", res, err)
	}
	return st
}

func sameRows(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("table holds %d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("row %d differs", i)
		}
	}
}

// TestBigQueryRetriedFlushRepeatsNothing is the runner retrying the append
// step's bundle after a partial write: the first attempt appends the first
// request of a sealed batch and fails; the runner discards the attempt's
// state changes and takes the step again with the committed state. Against
// a write service that checks offsets as BigQuery does, the table then
// holds exactly the rows of a clean run, each once.
func TestBigQueryRetriedFlushRepeatsNothing(t *testing.T) {
	rows := changelogRows(t, 60)
	defer func(n int) { maxAppendBytes = n }(maxAppendBytes)
	maxAppendBytes = 20 * len(rows[0]) // three or more requests per flush

	// A clean run.
	clean, cleanAPI := startFakeWrite(t)
	st := sealed(t, cleanAPI, rows)
	if res, err := flushStep(context.Background(), st, cleanAPI, nil, table.HourlyRevenueChangelog.Name, false, noSleep); err != nil || res.Appended != len(rows) {
		t.Fatalf("clean flush: %+v, %v", res, err)
	}
	sameRows(t, clean.rows(table.HourlyRevenueChangelog.Name), rows)

	// The same rows, with a failure after the first request landed.
	fake, api := startFakeWrite(t)
	st = sealed(t, api, rows)
	committed := *st // what the runner committed when the seal's bundle finished
	failed := errors.New("worker lost after a partial write")
	afterAppend = func(_ string, offset int64, _ int) error {
		if offset == 0 {
			return failed
		}
		return nil
	}
	defer func() { afterAppend = nil }()
	if _, err := flushStep(context.Background(), st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep); !errors.Is(err, failed) {
		t.Fatalf("first attempt: %v, want the injected failure", err)
	}
	if got := len(fake.rows(table.HourlyRevenueChangelog.Name)); got == 0 || got >= len(rows) {
		t.Fatalf("first attempt left %d rows, want a partial write", got)
	}
	afterAppend = nil

	retry := committed
	res, err := flushStep(context.Background(), &retry, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep)
	if err != nil || res.Appended != len(rows) {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
	if fake.alreadyExists != 1 {
		t.Errorf("%d appends refused as already stored, want 1 (the request the first attempt landed)", fake.alreadyExists)
	}
	// Only the seal creates a stream: the retry reused the sealed one.
	if n := fake.calls[table.HourlyRevenueChangelog.Name]["CreateWriteStream"]; n != 1 {
		t.Errorf("%d streams created, want 1", n)
	}
}

// Quota, rate-limit, backend and queue errors are retried with backoff;
// anything else fails at once, naming the table and the service's error.
func TestBigQueryAppendErrors(t *testing.T) {
	rows := changelogRows(t, 3)
	for _, tc := range []struct {
		name    string
		fail    []codes.Code
		wantErr string
		appends int
	}{
		{"quota then backend then queue", []codes.Code{codes.ResourceExhausted, codes.Internal, codes.Unavailable}, "", 4},
		{"aborted", []codes.Code{codes.Aborted}, "", 2},
		{"bad rows", []codes.Code{codes.InvalidArgument}, "append 3 rows to hourly_revenue_changelog", 1},
		{"permission", []codes.Code{codes.PermissionDenied}, "PermissionDenied", 1},
		{"outage outlasting the retries", []codes.Code{codes.Unavailable, codes.Unavailable, codes.Unavailable,
			codes.Unavailable, codes.Unavailable, codes.Unavailable}, "Unavailable", bqAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, api := startFakeWrite(t)
			st := sealed(t, api, rows)
			fake.fail = tc.fail
			var waits []time.Duration
			_, err := flushStep(context.Background(), st, api, nil, table.HourlyRevenueChangelog.Name, false, func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			})
			if got := fake.calls[table.HourlyRevenueChangelog.Name]["AppendRows"]; got != tc.appends {
				t.Errorf("%d append calls, want %d", got, tc.appends)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want success after retries", err)
				}
				sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
				for i := 1; i < len(waits); i++ {
					if waits[i] <= waits[i-1] {
						t.Errorf("backoff did not grow: %v", waits)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), table.HourlyRevenueChangelog.Name) {
				t.Fatalf("err = %v, want it to name %s and %q", err, table.HourlyRevenueChangelog.Name, tc.wantErr)
			}
		})
	}
}

// TIMESTAMP goes as int64 microseconds to BigQuery and as exact
// "seconds.micros" text to the emulator; NUMERIC as its exact decimal.
func TestBigQueryRowEncoding(t *testing.T) {
	tl := model.TooLate{Position: "p0/f.jsonl:4", EventID: "d1", EventTime: sinktest.MS("2026-11-04T10:10:00.250Z"), Payload: []byte("{}")}
	for _, tc := range []struct {
		rt   map[string]*bqRowType
		want any
	}{{bqRowTypes, tl.EventTime * 1000}, {bqEmulatorRowTypes, strconv.FormatInt(tl.EventTime/1000, 10) + ".250000"}} {
		b, err := encodeRow(tc.rt, table.TooLateCodec, tl)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tc.rt[table.TooLateEvents.Name].decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if v["event_time"] != tc.want || v["reason"] != model.ReasonWindowClosed {
			t.Errorf("event_time = %#v, reason %v; want %#v, window_closed", v["event_time"], v["reason"], tc.want)
		}
	}
	r := model.Row{WindowStart: sinktest.T10, WindowEnd: sinktest.T10 + sinktest.Hour, Dims: "{}", RevenueMicros: -1_500_001, Revision: 1, State: model.Late}
	b, err := encodeRow(bqRowTypes, table.ChangelogCodec, sink.ChangelogEntry{Row: r, WrittenAt: time.UnixMilli(sinktest.T10)})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := bqRowTypes[table.HourlyRevenueChangelog.Name].decode(b)
	if v["revenue"] != "-1.500001" || v["revenue_micros"] != int64(-1_500_001) || v["writer"] != "stream" {
		t.Errorf("changelog row = %v", v)
	}
}

// TestRetryableAppendCodes: which failures of a stream creation or an
// append are retried (each request is safe to repeat) and which fail the
// flush at once.
func TestRetryableAppendCodes(t *testing.T) {
	for code, want := range map[codes.Code]bool{
		codes.ResourceExhausted: true, codes.Unavailable: true, codes.Internal: true, codes.Aborted: true,
		codes.DeadlineExceeded: true, codes.Unknown: true,
		codes.InvalidArgument: false, codes.NotFound: false, codes.FailedPrecondition: false,
		codes.OutOfRange: false, codes.PermissionDenied: false,
	} {
		if got := retryableAppend(status.Error(code, "x")); got != want {
			t.Errorf("%v: retryable %v, want %v", code, got, want)
		}
	}
	if retryableAppend(context.Canceled) {
		t.Error("a cancelled context is retried")
	}
}

// TestFlushStepRules pins the write step's batching rules: a row buffered
// before a step is sealed by it and appended by the next one (at most two
// clock ticks after it arrived); a batch sealed in the current bundle is
// never appended by it; the size limits seal at once, without a tick.
func TestFlushStepRules(t *testing.T) {
	ctx := context.Background()
	rows := changelogRows(t, 5)
	fake, api := startFakeWrite(t)
	st := &memStore{}
	p := sink.DefaultFlushPolicy
	p.MaxRows = 3

	first, res, err := onRow(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, rows[0], p, false, noSleep)
	if err != nil || !first || res.Sealed || !res.Pending {
		t.Fatalf("first row: first=%v %+v %v; want the first of a buffer, only buffered", first, res, err)
	}
	// A tick seals it; a second step in the same bundle does not append.
	if res, err = flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep); err != nil || !res.Sealed || res.Appended != 0 {
		t.Fatalf("tick 1: %+v %v; want sealed, nothing appended", res, err)
	}
	if res, err = flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, true, noSleep); err != nil || res.Appended != 0 || !res.Pending {
		t.Fatalf("same bundle: %+v %v; want the batch sealed here kept for a later bundle", res, err)
	}
	if n := len(fake.rows(table.HourlyRevenueChangelog.Name)); n != 0 {
		t.Fatalf("%d rows appended in the bundle that sealed them", n)
	}
	// The next tick appends it.
	if res, err = flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep); err != nil || res.Appended != 1 || res.Sealed || res.Pending {
		t.Fatalf("tick 2: %+v %v; want the row appended, nothing left", res, err)
	}
	// Three rows reach MaxRows: the third seals without a tick, the
	// fourth (a later bundle) appends them and buffers itself.
	for i, r := range rows[1:4] {
		first, res, err = onRow(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, r, p, false, noSleep)
		if err != nil || first != (i == 0) || res.Sealed != (i == 2) {
			t.Fatalf("row %d: first=%v %+v %v", i+1, first, res, err)
		}
	}
	if n := len(fake.rows(table.HourlyRevenueChangelog.Name)); n != 1 {
		t.Fatalf("%d rows appended before the sealing bundle ended, want 1", n)
	}
	if _, res, err = onRow(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, rows[4], p, false, noSleep); err != nil || res.Appended != 0 || !res.Pending {
		// Below the limit: only buffered, the sealed batch waits for a tick.
		t.Fatalf("row 5: %+v %v", res, err)
	}
	for pending := true; pending; {
		if res, err = flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep); err != nil {
			t.Fatal(err)
		}
		pending = res.Pending
	}
	sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
}

// TestFlushStepReadsLinearly is one bundle carrying a key far over the batch
// size (a backlog after a stop): once the bundle sealed a batch, the rows
// after it are only buffered, so the state read grows with the rows, not
// with their square (every row past the limit re-read the whole buffer and
// decoded the sealed batch).
func TestFlushStepReadsLinearly(t *testing.T) {
	ctx := context.Background()
	fake, api := startFakeWrite(t)
	p := sink.DefaultFlushPolicy
	p.MaxRows = 10
	rows := changelogRows(t, 50*int(p.MaxRows))
	st := &memStore{}
	sealedHere := false
	for _, r := range rows {
		_, res, err := onRow(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, r, p, sealedHere, noSleep)
		if err != nil {
			t.Fatal(err)
		}
		sealedHere = sealedHere || res.Sealed
	}
	t.Logf("one bundle of %d rows read %d rows of state", len(rows), st.read)
	if want := 2 * len(rows); st.read > want {
		t.Errorf("one bundle of %d rows read %d rows of state, want at most %d", len(rows), st.read, want)
	}
	for pending := true; pending; { // later bundles append everything
		res, err := flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep)
		if err != nil {
			t.Fatal(err)
		}
		pending = res.Pending
	}
	sameRows(t, fake.rows(table.HourlyRevenueChangelog.Name), rows)
}

// TestFlushStepWithinMaxDelay holds the step to the policy's MaxDelay, which
// the launcher waits on the write counters before it takes the output as
// settled: a row counted just after a tick (the worst case) is appended by
// the second tick after it, not the first.
func TestFlushStepWithinMaxDelay(t *testing.T) {
	ctx := context.Background()
	fake, api := startFakeWrite(t)
	st := &memStore{}
	p := sink.DefaultFlushPolicy
	const counted = time.Millisecond // just after the tick at 0
	if _, _, err := onRow(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, changelogRows(t, 1)[0], p, false, noSleep); err != nil {
		t.Fatal(err)
	}
	var appendedAt time.Duration
	for tick := p.Interval; appendedAt == 0 && tick <= 10*p.Interval; tick += p.Interval {
		if _, err := flushStep(ctx, st, api, nil, table.HourlyRevenueChangelog.Name, false, noSleep); err != nil {
			t.Fatal(err)
		}
		if len(fake.rows(table.HourlyRevenueChangelog.Name)) > 0 {
			appendedAt = tick
		}
	}
	if wait := appendedAt - counted; appendedAt == 0 || wait > p.MaxDelay() {
		t.Fatalf("a row counted at %v was appended at %v (0: never), waiting %v; MaxDelay is %v", counted, appendedAt, wait, p.MaxDelay())
	}
	if appendedAt <= p.Interval {
		t.Errorf("appended at the first tick; the rule says the second")
	}
}
