package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func openTestSQLite(t testing.TB, path string) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func countRows(t *testing.T, s *SQLite, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSQLiteSchemaMatchesSpec(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	want := map[string][]string{
		"hourly_revenue": {"window_start", "window_end", "dims", "revenue", "revenue_micros", "event_count", "revision", "result_state"},
		"hourly_revenue_changelog": {"window_start", "window_end", "dims", "revenue", "revenue_micros", "event_count",
			"revision", "result_state", "written_at", "writer"},
		"too_late_events":    {"source_position", "event_id", "event_time", "payload", "reason"},
		"conflict_events":    {"source_position", "event_id", "first_fingerprint", "conflicting_fingerprint", "payload"},
		"quarantined_events": {"source_position", "payload", "reason"},
		"reconcile_diffs": {"run_id", "window_start", "dims", "streamed_revenue_micros", "recomputed_revenue_micros",
			"delta_micros", "streamed_count", "recomputed_count", "classification", "applied_revision"},
		"run_config":         {"key", "value"},
		"source_checkpoints": {"partition", "file", "offset", "line", "max_valid", "run", "updated_at"},
		"source_resume":      {"partition", "file", "offset", "line", "max_valid", "run", "sealed_at"},
	}
	for table, cols := range want {
		rs, err := s.db.Query(`SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rs.Next() {
			var c string
			if err := rs.Scan(&c); err != nil {
				t.Fatal(err)
			}
			got = append(got, c)
		}
		rs.Close()
		if !reflect.DeepEqual(got, cols) {
			t.Errorf("%s columns = %v, want %v", table, got, cols)
		}
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestSQLiteStoredFormats(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	sinktest.WantResult(t, sinktest.Write(t, s, sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", `{"country":"DE"}`, 1, model.OnTime, 2, 137_500_000),
	}}), sink.Result{Accepted: 1})

	var ws, we, dims, revenue, state string
	var micros, count, rev int64
	err := s.db.QueryRow(`SELECT window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state
		FROM hourly_revenue`).Scan(&ws, &we, &dims, &revenue, &micros, &count, &rev, &state)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{ws, we, dims, revenue, micros, count, rev, state}
	want := []any{"2026-11-04T10:00:00Z", "2026-11-04T11:00:00Z", `{"country":"DE"}`, "137.500000", int64(137_500_000), int64(2), int64(1), "ON_TIME"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hourly_revenue row = %v, want %v", got, want)
	}
	var writtenAt, writer string
	if err := s.db.QueryRow(`SELECT written_at, writer FROM hourly_revenue_changelog`).Scan(&writtenAt, &writer); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(writtenAt) {
		t.Errorf("written_at = %q, want RFC 3339 UTC with milliseconds", writtenAt)
	}
	if writer != "stream" {
		t.Errorf("writer = %q, want stream", writer)
	}
}

func TestSQLiteRejectsUnwritableBatch(t *testing.T) {
	s := openTestSQLite(t, filepath.Join(t.TempDir(), "revenue.db"))
	good := sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 1)
	bad := sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.StateUnknown, 1, 1)
	if _, err := s.Write(context.Background(), sink.Batch{Rows: []model.Row{good, bad}}); err == nil {
		t.Fatal("a row with an unknown state was accepted")
	}
	if n := countRows(t, s, "hourly_revenue"); n != 0 {
		t.Fatalf("a refused batch wrote %d rows", n)
	}
}

func TestSQLiteCheckpointsAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revenue.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000)
	a0 := model.Checkpoint{Partition: "p0", File: "a.jsonl", Offset: 100, Line: 10, MaxValid: 5, Run: "r1"}
	a1 := model.Checkpoint{Partition: "p1", File: "a.jsonl", Offset: 30, Line: 3, MaxValid: model.NoWatermark, Run: "r1"}
	b0 := model.Checkpoint{Partition: "p0", File: "b.jsonl", Offset: 10, Line: 1, MaxValid: 9, Run: "r1"}
	sinktest.Write(t, s, sink.Batch{Rows: []model.Row{r}, Progress: []model.Checkpoint{a0, a1}})
	sinktest.Write(t, s, sink.Batch{Progress: []model.Checkpoint{b0, b0}}) // a retried checkpoint changes nothing
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTestSQLite(t, path)
	got, err := s.RunCheckpoints(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []model.Checkpoint{a0, b0, a1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("checkpoints = %+v, want %+v", got, want)
	}
	if n := countRows(t, s, "source_checkpoints"); n != 3 {
		t.Fatalf("source_checkpoints has %d rows, want 3", n)
	}
	// The revision rule survives the restart.
	sinktest.WantResult(t, sinktest.Write(t, s, sink.Batch{Rows: []model.Row{r}}), sink.Result{Stale: 1})
}

// oldCheckpointsDDL is source_checkpoints as builds before the run column
// created it.
const oldCheckpointsDDL = `CREATE TABLE "source_checkpoints" (
	"partition" TEXT NOT NULL,
	"file" TEXT NOT NULL,
	"offset" INTEGER NOT NULL,
	"line" INTEGER NOT NULL,
	"max_valid" INTEGER NOT NULL,
	"updated_at" TEXT NOT NULL,
	PRIMARY KEY ("partition", "file")
)`

// A file an older build wrote gets the run column on open: its checkpoints
// are kept with the empty run, and two runs' checkpoints of one file are
// then both kept (the new key).
func TestSQLiteMigratesCheckpointsWithoutRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{oldCheckpointsDDL,
		`INSERT INTO source_checkpoints VALUES ('p0', 'a.jsonl', 100, 10, 5, '2026-11-04T10:00:00.000Z')`} {
		if _, err := old.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openTestSQLite(t, path)
	ctx := context.Background()
	var cols []string
	err = s.rows(ctx, "columns", &table.Table{Columns: []table.Column{{Name: "name", Type: table.String}}},
		`SELECT name FROM pragma_table_info('source_checkpoints') ORDER BY cid`, nil, func(v []any) error {
			cols = append(cols, v[0].(string))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if want := table.SourceCheckpoints.Names(); !reflect.DeepEqual(cols, want) {
		t.Fatalf("migrated columns = %v, want %v", cols, want)
	}
	kept := model.Checkpoint{Partition: "p0", File: "a.jsonl", Offset: 100, Line: 10, MaxValid: 5}
	got, err := s.RunCheckpoints(ctx, "")
	if err != nil || !reflect.DeepEqual(got, []model.Checkpoint{kept}) {
		t.Fatalf("old checkpoints = %+v, %v; want %+v", got, err, kept)
	}
	again := kept
	again.Run, again.Offset, again.Line = "r2", 120, 12
	sinktest.Write(t, s, sink.Batch{Progress: []model.Checkpoint{again}})
	if got, err := s.RunCheckpoints(ctx, "r2"); err != nil || !reflect.DeepEqual(got, []model.Checkpoint{again}) {
		t.Fatalf("r2 checkpoints = %+v, %v; want %+v", got, err, again)
	}
	if n := countRows(t, s, "source_checkpoints"); n != 2 {
		t.Fatalf("source_checkpoints has %d rows, want the old one and r2's", n)
	}
	// Opening the migrated file again changes nothing.
	s2 := openTestSQLite(t, path)
	if got, err := s2.RunCheckpoints(ctx, ""); err != nil || !reflect.DeepEqual(got, []model.Checkpoint{kept}) {
		t.Fatalf("after reopening: old checkpoints = %+v, %v", got, err)
	}
}

// checkConcurrent verifies that every row and audit row of writers × batches
// made it into the file.
func checkConcurrent(t *testing.T, path string, writers, batches int) {
	t.Helper()
	s := openTestSQLite(t, path)
	const rowsPerBatch = 5
	if got, want := countRows(t, s, "hourly_revenue"), writers*batches*rowsPerBatch+1; got != want {
		t.Errorf("hourly_revenue has %d rows, want %d", got, want)
	}
	if got, want := countRows(t, s, "too_late_events"), writers*batches; got != want {
		t.Errorf("too_late_events has %d rows, want %d", got, want)
	}
	if got, want := countRows(t, s, "quarantined_events"), writers*batches; got != want {
		t.Errorf("quarantined_events has %d rows, want %d", got, want)
	}
	// The shared key ends at the highest revision anyone sent, and its
	// changelog strictly increases.
	var maxRev int64
	if err := s.db.QueryRow(`SELECT revision FROM hourly_revenue WHERE dims = '{"shared":true}'`).Scan(&maxRev); err != nil {
		t.Fatal(err)
	}
	if want := int64((batches-1)*2 + (writers - 1) + 1); maxRev != want {
		t.Errorf("shared key revision = %d, want %d", maxRev, want)
	}
	cps, err := s.RunCheckpoints(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != writers*batches {
		t.Errorf("%d checkpoints, want %d", len(cps), writers*batches)
	}
}

func TestSQLiteConcurrentHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revenue.db")
	const writers, batches = 2, 200
	sinktest.WriteConcurrently(t, writers, batches, func(int) sink.Sink { return openTestSQLite(t, path) })
	checkConcurrent(t, path, writers, batches)
}

// TestSQLiteConcurrentProcesses runs two copies of the test binary writing
// the same file, to exercise the file lock rather than an in-process pool.
func TestSQLiteConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "revenue.db")
	const writers, batches = 2, 100
	cmds := make([]*exec.Cmd, writers)
	for w := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSQLiteWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SINKS_HELPER_WRITER="+strconv.Itoa(w),
			"SINKS_HELPER_PATH="+path, "SINKS_HELPER_BATCHES="+strconv.Itoa(batches))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process %d: %v", w, err)
		}
	}
	checkConcurrent(t, path, writers, batches)
}

func TestHelperSQLiteWriter(t *testing.T) {
	ws := os.Getenv("SINKS_HELPER_WRITER")
	if ws == "" {
		t.Skip("helper process for TestSQLiteConcurrentProcesses")
	}
	w, _ := strconv.Atoi(ws)
	batches, _ := strconv.Atoi(os.Getenv("SINKS_HELPER_BATCHES"))
	s, err := Open(context.Background(), os.Getenv("SINKS_HELPER_PATH"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range batches {
		if _, err := s.Write(context.Background(), sinktest.ConcurrentBatch(t, w, i)); err != nil {
			t.Fatalf("writer %d batch %d: %v", w, i, err)
		}
	}
}

func TestIsBusy(t *testing.T) {
	// Hold the write lock from a raw connection and check that a second
	// handle with a short wait reports a busy error that isBusy recognises.
	path := filepath.Join(t.TempDir(), "revenue.db")
	s := openTestSQLite(t, path)
	db, err := sql.Open("sqlite", path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Write(ctx, sink.Batch{Rows: []model.Row{sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 1, 1)}})
	if err == nil {
		t.Fatal("write succeeded while another connection held the lock")
	}
	if !isBusy(err) {
		t.Fatalf("isBusy(%v) = false", err)
	}
}

// BenchmarkSQLiteWrite writes batches of 10,000 snapshot rows (the same keys
// at a new revision each time, so every row updates) plus 10,000 new audit
// rows.
func BenchmarkSQLiteWrite(b *testing.B) {
	s := openTestSQLite(b, filepath.Join(b.TempDir(), "revenue.db"))
	const n = 10_000
	base := sinktest.MS("2026-01-01T00:00:00Z")
	batch := sink.Batch{Rows: make([]model.Row, n), Audit: sink.Audit{TooLate: make([]model.TooLate, n)}}
	for i := range n {
		ws := base + int64(i/10)*sinktest.Hour
		batch.Rows[i] = model.Row{WindowStart: ws, WindowEnd: ws + sinktest.Hour, Dims: fmt.Sprintf(`{"country":"C%d"}`, i%10),
			RevenueMicros: int64(i) * 1_000_000, EventCount: int64(i), State: model.Late}
		batch.TooLate[i] = model.TooLate{EventID: fmt.Sprintf("e%d", i), EventTime: ws,
			Payload: []byte(`{"event_id":"e","event_time":"2026-01-01T00:00:00Z","user_id":"u","amount":"1.00"}`)}
	}
	ctx := context.Background()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		for i := range n {
			batch.Rows[i].Revision = int64(it + 1)
			batch.TooLate[i].Position = fmt.Sprintf("p%d/f.jsonl:%d", it, i)
		}
		b.StartTimer()
		res, err := s.Write(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		if res.Accepted != n || res.AuditInserted != n {
			b.Fatalf("result %+v", res)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n*b.N)/sec, "rows/s")
	b.ReportMetric(float64(2*n*b.N)/sec, "rows+audit/s")
}
