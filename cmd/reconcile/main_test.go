package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/launch"
	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/cmdtest"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// The exit codes are the command's contract, so the tests run the real
// binary: this test binary re-executed with RECONCILE_MAIN=1 is main (and
// with LAUNCH_MAIN=1 cmd/launch's, to make the demo's output).
func TestMain(m *testing.M) {
	if os.Getenv("RECONCILE_MAIN") == "1" {
		os.Exit(reconcile.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv("LAUNCH_MAIN") == "1" {
		os.Exit(launch.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func reconcileCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cmdtest.Run(t, "", "RECONCILE_MAIN", args...)
}

// command runs main (the one env names) in dir ("" for this one).
// streamedSink replays a generated log with the oracle and writes its FINAL
// rows and audit rows as the stream would.
func streamedSink(t *testing.T) (logDir, sinkPath string) {
	t.Helper()
	c := gen.Demo()
	c.Events = 1500
	c.MaxLine = 4096
	logDir = filepath.Join(t.TempDir(), "log")
	if _, err := gen.Write(logDir, c); err != nil {
		t.Fatal(err)
	}
	s := oracle.DefaultSettings(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	s.Event.MaxLine = c.MaxLine
	res, err := oracle.Replay(logDir, s)
	if err != nil {
		t.Fatal(err)
	}
	sinkPath = filepath.Join(t.TempDir(), "revenue.db")
	db, err := sqlite.Open(context.Background(), sinkPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.CheckRunConfig(ctx, map[string]string{"window": "1h0m0s", "dimensions": "", "allowed_lateness": "24h0m0s"}); err != nil {
		t.Fatal(err)
	}
	b := sink.Batch{Audit: sink.Audit{TooLate: res.TooLate, Conflicts: res.Conflicts, Quarantined: res.Quarantined}}
	for k, v := range res.Final {
		b.Rows = append(b.Rows, model.Row{WindowStart: k.WindowStart, WindowEnd: k.WindowStart + time.Hour.Milliseconds(), Dims: k.Dims,
			RevenueMicros: v.RevenueMicros, EventCount: v.Count, Revision: 1, State: model.Final, Writer: "stream"})
	}
	if _, err := db.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	return logDir, sinkPath
}

func TestExitCodes(t *testing.T) {
	logDir, sinkPath := streamedSink(t)
	report := filepath.Join(t.TempDir(), "r.html")
	args := []string{"--source=" + logDir, "--sink=sqlite:" + sinkPath, "--max-line=4096", "--log-level=warn"}

	// Material differences, every one explained (the too-late events),
	// written with --apply: nothing material left, 0.
	code, stdout, stderr := reconcileCmd(t, append(args, "--apply", "--run-id=first", "--report="+report)...)
	if code != 0 || !strings.Contains(stdout, "reconcile first: --apply") || !strings.Contains(stdout, "missing_window") {
		t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("report: %v", err)
	}
	// Nothing left to correct: 0, and nothing written.
	code, stdout, stderr = reconcileCmd(t, append(args, "--apply", "--run-id=second")...)
	if code != 0 || !strings.Contains(stdout, "0 differing") {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("second run:\n%s", stdout)

	// Errors: 2, one line on stderr, nothing on stdout, before any work.
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, bad := range [][]string{
		{"--bogus"},
		{"--source=" + logDir, "--sink=sqlite:" + sinkPath, "--from=tomorrow"},
		{"--source=" + filepath.Join(t.TempDir(), "nope"), "--sink=sqlite:" + sinkPath},
		{"--source=" + logDir, "--sink=sqlite:" + missing},
		{"--source=" + logDir, "--sink=bigquery:proj-123.ds"},
		{"--source=" + logDir, "--sink=sqlite:" + sinkPath, "--report=out.pdf"},
		{"--source=" + logDir, "--sink=sqlite:" + sinkPath, "--window=30m"}, // run_config mismatch
		{"--source=" + logDir, "--sink=sqlite:" + sinkPath, "extra"},
	} {
		code, stdout, stderr := reconcileCmd(t, bad...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "reconcile: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line on stderr", bad, code, stdout, stderr)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%v created the missing sink", bad)
		}
	}
	if code, stdout, _ := reconcileCmd(t, "--help"); code != 0 || !strings.Contains(stdout, "--source=PATH") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout)
	}
}

// TestRefusesLocalPartsOffProcess: on a runner whose workers run in other
// processes, a SQLite sink, a local source folder and a local work dir are
// one line on stderr and exit 2 before any work, naming the part and what to
// use instead.
func TestRefusesLocalPartsOffProcess(t *testing.T) {
	dir := t.TempDir()
	const shared = ", or pass --shared-filesystem if every worker sees this machine's paths\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runner=universal", "--source=" + dir, "--sink=sqlite:x.db"},
			"reconcile: --sink=sqlite:x.db is local to this machine, but with --runner=universal the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--runner=dataflow", "--source=" + dir, "--sink=sqlite:x.db"},
			"reconcile: --sink=sqlite:x.db is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--runner=dataflow", "--source=" + dir, "--sink=bigquery:my-project.d"},
			"reconcile: --source=" + dir + " is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: read the raw log from a bucket with --source=gs://BUCKET/PATH" + shared},
		{[]string{"--runner=dataflow", "--source=gs://b/raw", "--sink=bigquery:my-project.d"},
			"reconcile: the result's work dir (a local temporary folder by default) is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: pass --work-dir=gs://BUCKET/PATH" + shared},
		{[]string{"--environment_type=PROCESS", "--source=gs://b/raw", "--sink=bigquery:my-project.d", "--work-dir=" + dir},
			"reconcile: --work-dir=" + dir + " is local to this machine, but with --environment_type=PROCESS the workers run in other processes or on other machines: pass --work-dir=gs://BUCKET/PATH" + shared},
	} {
		code, stdout, stderr := reconcileCmd(t, tc.args...)
		if code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("reconcile %s: exit %d, stdout %q, stderr %q\nwant exit 2, stderr %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
	// --shared-filesystem lets every local part through.
	o := reconcile.Defaults()
	o.Source, o.Runner, o.EnvironmentType, o.SharedFilesystem = dir, "universal", "PROCESS", true
	if err := o.Validate(); err != nil {
		t.Errorf("with --shared-filesystem: %v", err)
	}
}

// TestDemoExitCodes runs reconcile as a user would on the demo's fresh
// output (cmd/launch with no flags): its differences are the too-late
// events, all explained, so a dry run exits 3 and says to run --apply;
// --apply exits 0 and a rerun finds nothing (0). Its figures, in the
// stream's terms, are the stream's own conservation line. A tampered row
// is unexplained (1); a corrupt one is one line naming table, window and
// column, the other windows are still compared, and the run exits 1.
func TestDemoExitCodes(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := cmdtest.Run(t, dir, "LAUNCH_MAIN", "--log-level=warn")
	if code != 0 {
		t.Fatalf("launch: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// "conservation: read 41379 = counted ... + too_late 84: holds"
	_, identity, _ := strings.Cut(stdout, "conservation: ")
	identity, _, _ = strings.Cut(identity, ": holds")
	if !strings.HasPrefix(identity, "read ") || strings.Contains(identity, "\n") {
		t.Fatalf("launch printed no conservation line:\n%s", stdout)
	}
	for _, name := range []string{"tampered.db", "corrupt.db"} {
		copyFile(t, filepath.Join(dir, "revenue.db"), filepath.Join(dir, name))
	}
	rec := func(db string, args ...string) (int, string, string) {
		t.Helper()
		return cmdtest.Run(t, dir, "RECONCILE_MAIN", append([]string{"--source=demo-data", "--sink=sqlite:" + db, "--log-level=warn"}, args...)...)
	}

	code, stdout, stderr = rec("revenue.db")
	if code != reconcile.ExitPending || !strings.Contains(stdout, "stream   "+identity+", as the stream counts them") ||
		!strings.Contains(stdout, "explained differences pending") || !strings.Contains(stdout, "run again with --apply") ||
		!strings.Contains(stdout, " 0 unexplained)") || !strings.Contains(stdout, "too_late  ") || stderr != "" {
		t.Fatalf("dry run on the demo: exit %d, want 3 with the stream's figures %q\nstdout:\n%s\nstderr:\n%s", code, identity, stdout, stderr)
	}
	t.Logf("dry run:\n%s", stdout)
	if code, stdout, stderr = rec("revenue.db", "--apply"); code != reconcile.ExitClean || !strings.Contains(stdout, "nothing material left") {
		t.Fatalf("--apply: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr = rec("revenue.db"); code != reconcile.ExitClean || !strings.Contains(stdout, " 0 differing") {
		t.Fatalf("rerun: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// One event more in a FINAL row than the raw log has: unexplained.
	window := sqlExec(t, filepath.Join(dir, "tampered.db"), "event_count = event_count + 1")
	code, stdout, stderr = rec("tampered.db", "--top=100")
	if code != reconcile.ExitUnexplained || !strings.Contains(stdout, " 1 unexplained)") || !strings.Contains(stdout, window) ||
		!strings.Contains(stdout, "a human must look") {
		t.Fatalf("tampered %s: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", window, code, stdout, stderr)
	}

	// A revenue that is not a decimal: one line, the others compared.
	window = sqlExec(t, filepath.Join(dir, "corrupt.db"), "revenue = '12x.5'")
	code, stdout, stderr = rec("corrupt.db")
	want := "unreadable hourly_revenue row window_start=" + window + " dims={}: column revenue: bad amount \"12x.5\"\n"
	if code != reconcile.ExitUnexplained || strings.Count(stdout, window) != 1 || !strings.Contains(stdout, want) ||
		!strings.Contains(stdout, "1 unreadable sink rows") || !strings.Contains(stdout, "too_late  ") || stderr != "" {
		t.Fatalf("corrupt %s: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", window, code, want, stdout, stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sqlExec applies set to the current row of the latest FINAL window
// (outside the demo's too-late windows) and returns that window_start.
func sqlExec(t *testing.T, path, set string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var window string
	if err := db.QueryRow(`SELECT MAX(window_start) FROM hourly_revenue WHERE result_state = 'FINAL'`).Scan(&window); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE hourly_revenue SET `+set+` WHERE window_start = ?`, window); err != nil {
		t.Fatal(err)
	}
	return window
}
