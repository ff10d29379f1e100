package launch

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// wantRefusedBeforeWork runs launch with args in an empty working folder and holds it to the
// bad-flag contract (wantRefused), then checks that no work started: the demo's log
// (./demo-data) was not generated and the default sink (./revenue.db) not created.
func wantRefusedBeforeWork(t *testing.T, args []string, want string) {
	t.Helper()
	t.Chdir(t.TempDir())
	wantRefused(t, args, want)
	for _, name := range []string{DefaultDemoDir, "revenue.db"} {
		if _, err := os.Lstat(name); !os.IsNotExist(err) {
			t.Errorf("launch %v: ./%s exists after the refusal (lstat: %v): work started before the check", args, name, err)
		}
	}
	if tmp, _ := filepath.Glob("." + DefaultDemoDir + ".tmp-*"); len(tmp) > 0 {
		t.Errorf("launch %v: a partial demo log %v after the refusal", args, tmp)
	}
}

// keepBeamFlags restores the process-wide Beam flags a test's command line sets.
func keepBeamFlags(t *testing.T) {
	async, endpoint := *jobopts.Async, *jobopts.Endpoint
	t.Cleanup(func() { *jobopts.Async, *jobopts.Endpoint = async, endpoint })
}

// TestAsyncNeedsAJobServer: with prism in this process (no --endpoint), --async (or Dataflow's
// alias --execute_async) would return at once and take the job down with the process: refused
// before any work, where before it printed "job  submitted" with no id and exited 0.
func TestAsyncNeedsAJobServer(t *testing.T) {
	const want = "launch: --async: prism runs in this process (no --endpoint), so the job would end with launch before it did any work: drop --async, or submit to a job server with --endpoint=HOST:PORT"
	for _, flag := range []string{"--async", "--execute_async"} {
		t.Run(flag, func(t *testing.T) {
			keepBeamFlags(t)
			*jobopts.Endpoint = "" // an earlier test's run may have started a job server in this process
			wantRefusedBeforeWork(t, []string{flag}, want)
		})
	}
	t.Run("with --endpoint", func(t *testing.T) {
		keepBeamFlags(t)
		*jobopts.Async, *jobopts.Endpoint = true, "localhost:8099"
		if err := Defaults().Validate(); err != nil {
			t.Errorf("--async --endpoint=localhost:8099: %v, want accepted (the job server outlives the launcher)", err)
		}
	})
}

// TestDemoRefusedBeforeWork: a bad folder setting or a busy port of the live views is refused
// before the demo's log is generated and before the sink is created (the folder settings were
// checked with the folder, the ports bound when the views started: both after the demo's log).
func TestDemoRefusedBeforeWork(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	port := busy.Addr().(*net.TCPAddr).Port
	inUse := func(flag string) string {
		return fmt.Sprintf("launch: %s: listen tcp %s: bind: address already in use", flag, addr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--settle=-1s"}, "launch: --settle must not be negative, got -1s"},
		{[]string{"--discover-every=-1s"}, "launch: --discover-every must not be negative, got -1s"},
		{[]string{"--ui=" + addr}, inUse("--ui")},
		{[]string{"--metrics-addr=" + addr}, inUse("--metrics-addr")},
		{[]string{fmt.Sprintf("--prism-ui-port=%d", port)}, inUse(fmt.Sprintf("--prism-ui-port=%d", port))},
	} {
		t.Run(tc.args[0], func(t *testing.T) { wantRefusedBeforeWork(t, tc.args, tc.want) })
	}
}

// TestEmptySourceRefused: a source folder with no partition is refused up front, replayed as
// followed (rawlog.ReadablePartitions, reconcile's check too); before, a replay ran, read
// nothing and failed with exit 1 ("the runner reported no counters").
func TestEmptySourceRefused(t *testing.T) {
	empty := t.TempDir()
	db := filepath.Join(t.TempDir(), "revenue.db")
	want := "launch: --source=" + empty + ": " + rawlog.ErrNoPartitions.Error()
	for _, args := range [][]string{
		{"--source=" + empty, "--sink=sqlite:" + db},
		{"--source=" + empty, "--sink=sqlite:" + db, "--follow"},
	} {
		wantRefused(t, args, want)
		if _, err := os.Lstat(db); !os.IsNotExist(err) {
			t.Errorf("launch %v: the sink %s exists after the refusal (lstat: %v)", args, db, err)
		}
	}
}
