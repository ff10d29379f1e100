package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
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
