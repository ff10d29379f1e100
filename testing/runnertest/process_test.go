package runnertest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The boot program's copies of this binary are found, and only they: not a
// copy of another size, nor one written before the tests started.
func TestWorkerCopiesAreTheBootProgramsOfThisBinary(t *testing.T) {
	self := filepath.Join(t.TempDir(), "self")
	if err := os.WriteFile(self, make([]byte, 1000), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Minute)
	copyOf := func(size int, written time.Time) string {
		dir, err := os.MkdirTemp("/tmp/", "bin*") // where the boot program copies it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		worker := filepath.Join(dir, "worker")
		if err := os.WriteFile(worker, make([]byte, size), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(worker, written, written); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	ours := copyOf(1000, time.Now())
	copyOf(1001, time.Now())            // another program
	copyOf(1000, start.Add(-time.Hour)) // before the tests
	if got := workerCopies(self, start); !slices.Contains(got, ours) || len(got) != 1 {
		t.Errorf("copies %v, want [%s]", got, ours)
	}
}

// StopWorkers kills the processes of its environment's folder, and only
// those: of two stand-in workers, one per folder, it stops one, and that one
// is the worker of the folder it was given (killed). A folder with no worker
// stops none.
func TestStopWorkersStopsOnlyItsFoldersWorkers(t *testing.T) {
	start := func(dir string) *exec.Cmd {
		// Two commands keep sh itself running with the argument (one would be exec'd).
		cmd := exec.Command("sh", "-c", "sleep 60; :", "sh", "--semi_persist_dir="+filepath.Join(dir, "workers"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	ours, other := t.TempDir(), t.TempDir()
	worker := start(ours)
	start(other)
	if n := StopWorkers(t.TempDir()); n != 0 {
		t.Errorf("a folder without workers: %d stopped, want 0", n)
	}
	if n := StopWorkers(ours); n != 1 {
		t.Fatalf("%d workers stopped, want the 1 of its folder", n)
	}
	var exit *exec.ExitError
	if err := worker.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the folder's worker ended with %v, want killed", err)
	}
}
