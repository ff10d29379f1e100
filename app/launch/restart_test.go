package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// demoLog writes a generated demo log of events purchases into a new
// folder.
func demoLog(t *testing.T, events int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	c := gen.Demo()
	c.Events = events
	if _, err := gen.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRestartAfterKillConverges kills the real binary with SIGKILL at
// several points of a replay (some of them inside SQLite transactions), then
// runs it again to completion on the same sink, and checks SPEC §8's
// recovery bar: the rows equal a clean run's, no key's changelog ever went
// backwards, and the audit tables hold each record once.
func TestRestartAfterKillConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the real binary several times")
	}
	bin := buildBinary(t)
	logDir := demoLog(t, 100_000) // enough for the watermark to advance in steps (5,000 records per reader call at 8 shards)
	clean := filepath.Join(t.TempDir(), "clean.db")
	began := time.Now()
	runBinary(t, bin, logDir, clean, 0)
	took := time.Since(began)
	want := readAll(t, clean)

	// Kill points spread over a clean run's duration: early (nothing written
	// yet), in the middle of the rows, and late (most windows FINAL).
	for _, f := range []float64{0.5, 0.75, 0.9} {
		kill := time.Duration(f * float64(took))
		t.Run(fmt.Sprintf("kill at %.0f%%", 100*f), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "revenue.db")
			runBinary(t, bin, logDir, db, kill)
			if _, err := os.Stat(db); err == nil {
				partial := readAll(t, db)
				t.Logf("killed after %v: the sink held %d of %d keys, %d of %d revisions", kill, len(partial.current), len(want.current), len(partial.changelog), len(want.changelog))
			}
			runBinary(t, bin, logDir, db, kill/2) // a second kill, earlier
			runBinary(t, bin, logDir, db, 0)
			got := readAll(t, db)
			if !slices.Equal(values(got.current), values(want.current)) {
				t.Errorf("rows after restarts differ from a clean run:\n got %v\nwant %v", values(got.current), values(want.current))
			}
			checkMonotone(t, got.changelog)
			for name, n := range want.audit {
				if got.audit[name] != n {
					t.Errorf("%s: %d rows after restarts, %d in a clean run", name, got.audit[name], n)
				}
			}
			// Every audit row with its exact payload, the dedup step's
			// conflicts read back from the raw log by a restarted job too.
			wantSink(t, oracleOf(t, logDir), openSQLite(t, db))
		})
	}
}

// oracleOf recomputes a replay of the raw log dir.
func oracleOf(t testing.TB, dir string) oracle.Result {
	t.Helper()
	want, err := oracle.Replay(dir, oracle.DefaultSettings(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// openSQLite opens a SQLite sink for assertions.
func openSQLite(t testing.TB, path string) *sqlite.SQLite {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// runBinary runs one replay; with kill > 0 it SIGKILLs the process then
// (a run that finishes first is fine: the kill lands on a later run).
func runBinary(t *testing.T, bin, source, db string, kill time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--source="+source, "--sink=sqlite:"+db, "--log-level=error")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if kill > 0 {
		timer := time.AfterFunc(kill, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	if kill == 0 && err != nil {
		t.Fatalf("run to completion failed: %v", err)
	}
}

type sinkState struct {
	current, changelog []model.Row
	audit              map[string]int
}

func readAll(t testing.TB, db string) sinkState {
	t.Helper()
	return readSpec(t, sink.Spec{Scheme: sink.SchemeSQLite, Path: db})
}

// readSpec reads every table of a readable sink.
func readSpec(t testing.TB, spec sink.Spec) sinkState {
	t.Helper()
	ctx := context.Background()
	s, ok, err := sink.OpenReader(ctx, spec)
	if err != nil || !ok {
		t.Fatalf("open %s: ok %v, err %v", spec, ok, err)
	}
	defer s.Close()
	var st sinkState
	if st.current, err = s.CurrentRows(ctx); err != nil {
		t.Fatal(err)
	}
	if st.changelog, err = s.Changelog(ctx); err != nil {
		t.Fatal(err)
	}
	late, err := s.TooLate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conflicts, err := s.Conflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	quarantined, err := s.Quarantined(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.audit = map[string]int{"too_late_events": len(late), "conflict_events": len(conflicts), "quarantined_events": len(quarantined)}
	return st
}

// values keeps what a clean run and a restarted one must agree on: each
// key's value and state (revision numbers may differ).
func values(rows []model.Row) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %s n=%d %s", model.FormatTime(r.WindowStart), r.Dims, model.FormatMicros(r.RevenueMicros), r.EventCount, r.State))
	}
	slices.Sort(out)
	return out
}

// checkMonotone asserts SPEC §4 along every key's changelog: revisions
// strictly increase, event_count never falls, result_state never goes back.
func checkMonotone(t testing.TB, changelog []model.Row) {
	t.Helper()
	last := map[string]model.Row{}
	for _, r := range changelog {
		p, ok := last[r.Key()]
		if ok && (r.Revision <= p.Revision || r.EventCount < p.EventCount || r.State < p.State) {
			t.Errorf("changelog of %s went backwards: %+v after %+v", r.Key(), r, p)
		}
		last[r.Key()] = r
	}
}
