package launch

import (
	"context"
	"database/sql"
	"errors"
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
	"github.com/revenue-stream/hourly/testing/sinktest"
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
	runBinary(t, bin, logDir, clean)
	want := readAll(t, clean)

	// Kill points by progress, not by time (a warm run can finish before a
	// deadline taken from the first): once the sink holds a quarter, a half,
	// three quarters of a clean run's revisions.
	for _, f := range []float64{0.25, 0.5, 0.75} {
		rows := int(f * float64(len(want.changelog)))
		t.Run(fmt.Sprintf("kill at %.0f%%", 100*f), func(t *testing.T) {
			var db string
			landed := false
			for attempt := 0; attempt < 3 && !landed; attempt++ {
				db = filepath.Join(t.TempDir(), "revenue.db")
				landed = killAt(t, bin, logDir, db, rows)
			}
			if !landed {
				t.Fatalf("three runs ended before their sink held %d revisions: no kill landed", rows)
			}
			partial := readAll(t, db)
			t.Logf("killed once the sink held %d revisions or more: it held %d of %d keys, %d of %d revisions", rows, len(partial.current), len(want.current), len(partial.changelog), len(want.changelog))
			// A second kill, as soon as the restarted run adds a revision; a
			// run with little left may finish first.
			if killAt(t, bin, logDir, db, len(partial.changelog)+1) {
				t.Logf("the restarted run was killed too, at %d revisions", len(readAll(t, db).changelog))
			} else {
				t.Logf("the restarted run finished before it could be killed")
			}
			runBinary(t, bin, logDir, db)
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

// runBinary runs one replay to completion.
func runBinary(t *testing.T, bin, source, db string) {
	t.Helper()
	if err := replay(t, bin, source, db, nil); err != nil {
		t.Fatalf("run to completion failed: %v", err)
	}
}

// killAt runs one replay and SIGKILLs it once the sink's changelog holds at
// least rows revisions. It reports whether the kill landed: false when the
// run ended first (exit 0).
func killAt(t *testing.T, bin, source, db string, rows int) bool {
	t.Helper()
	err := replay(t, bin, source, db, func(p *os.Process, done <-chan struct{}) {
		for tick := time.NewTicker(5 * time.Millisecond); ; {
			select {
			case <-done:
				tick.Stop()
				return
			case <-tick.C:
				if changelogRows(db) >= rows {
					tick.Stop()
					_ = p.Signal(syscall.SIGKILL)
					return
				}
			}
		}
	})
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("the run to be killed at %d revisions failed on its own: %v", rows, err)
	}
	return false
}

// replay runs the binary on source into the SQLite sink db, with watch (if
// any) running beside it until it exits.
func replay(t *testing.T, bin, source, db string, watch func(p *os.Process, done <-chan struct{})) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--source="+source, "--sink=sqlite:"+db, "--log-level=error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		if watch != nil {
			watch(cmd.Process, done)
		}
	}()
	err := cmd.Wait()
	close(done)
	<-watched
	return err
}

// changelogRows counts the sink's changelog rows as another process writes
// them (0 while the file or the table does not exist yet).
func changelogRows(db string) int {
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	conn, err := sql.Open("sqlite", db+"?_busy_timeout=50") // read-write: a read-only reader of a WAL database needs its -shm writable
	if err != nil {
		return 0
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow(`SELECT COUNT(*) FROM hourly_revenue_changelog`).Scan(&n); err != nil {
		return 0
	}
	return n
}

type sinkState struct {
	current   []model.Row
	changelog []sink.ChangelogEntry // by key, then revision
	audit     map[string]int
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
	if st.current, err = sinktest.CurrentRows(ctx, s); err != nil {
		t.Fatal(err)
	}
	if st.changelog, err = changelogEntries(ctx, s); err != nil {
		t.Fatal(err)
	}
	late, err := sinktest.TooLate(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	conflicts, err := sinktest.Conflicts(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	quarantined, err := sinktest.Quarantined(ctx, s)
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

// changelogEntries reads the changelog with each revision's written_at
// where the sink keeps it.
func changelogEntries(ctx context.Context, s sink.Reader) ([]sink.ChangelogEntry, error) {
	if _, ok := s.(sink.RecentReader); ok {
		return s.Changelog(ctx, sink.Query{})
	}
	rows, err := sinktest.ChangelogRows(ctx, s)
	entries := make([]sink.ChangelogEntry, len(rows))
	for i, r := range rows {
		entries[i].Row = r
	}
	return entries, err
}

// checkMonotone asserts SPEC §4 along every key's changelog (sorted by key,
// then revision): no revision was accepted before a lower one, event_count
// never falls, result_state never goes back.
func checkMonotone(t testing.TB, changelog []sink.ChangelogEntry) {
	t.Helper()
	for _, v := range backwards(changelog) {
		t.Error(v)
	}
}

// backwards lists each revision that went back from the one before it of
// its key.
func backwards(changelog []sink.ChangelogEntry) []string {
	var out []string
	last := map[string]sink.ChangelogEntry{}
	for _, r := range changelog {
		p, ok := last[r.Key()]
		if ok && (r.Revision <= p.Revision || r.EventCount < p.EventCount || r.State < p.State ||
			!r.WrittenAt.IsZero() && r.WrittenAt.Before(p.WrittenAt)) {
			out = append(out, fmt.Sprintf("changelog of %s went backwards: %+v after %+v", r.Key(), r, p))
		}
		last[r.Key()] = r
	}
	return out
}

// TestBackwardsFindsEachRegression is checkMonotone's control: the
// changelog comes sorted by revision, so only written_at shows a revision
// accepted before a lower one.
func TestBackwardsFindsEachRegression(t *testing.T) {
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	entry := func(dims string, rev, count int64, state model.ResultState, written time.Duration) sink.ChangelogEntry {
		return sink.ChangelogEntry{Row: model.Row{Dims: dims, Revision: rev, EventCount: count, State: state}, WrittenAt: at.Add(written)}
	}
	good := []sink.ChangelogEntry{
		entry("a", 1, 1, model.Early, 0), entry("a", 2, 3, model.OnTime, 0), entry("a", 3, 3, model.Final, time.Second),
		entry("b", 1, 5, model.Late, time.Second), entry("b", 2, 6, model.Late, 2*time.Second),
	}
	if got := backwards(good); len(got) != 0 {
		t.Errorf("a changelog that only moves forward: %v", got)
	}
	for name, bad := range map[string][]sink.ChangelogEntry{
		"written before a lower revision": {entry("a", 1, 1, model.Early, time.Second), entry("a", 2, 2, model.Early, 0)},
		"count falls":                     {entry("a", 1, 2, model.Early, 0), entry("a", 2, 1, model.Early, 0)},
		"state goes back":                 {entry("a", 1, 2, model.Late, 0), entry("a", 2, 2, model.OnTime, 0)},
		"revision repeated":               {entry("a", 1, 2, model.Early, 0), entry("a", 1, 2, model.Early, 0)},
	} {
		if got := backwards(bad); len(got) != 1 {
			t.Errorf("%s: %d findings, want 1: %v", name, len(got), got)
		}
	}
}
