package runnertest

import (
	"os"
	"path/filepath"
	"slices"
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
