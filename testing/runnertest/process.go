package runnertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bootPackage is the Go SDK's container boot program: given --id and
// --provision_endpoint, it asks the runner for the job's options and staged
// files, fetches the worker binary and runs it as the SDK harness. It is
// what a PROCESS environment runs on a Flink task manager.
const bootPackage = "github.com/apache/beam/sdks/v2/go/container"

// wrapper is the command a PROCESS environment names. prism v2.77.0 starts
// it with --id='ID' — the quotes inside the argument, as if for a shell —
// and the boot program, taking them as part of the id, fails with "not
// registered in worker pool"; the wrapper strips them. The worker's output
// goes to a log file rather than the test's stdout: a worker that outlives
// its job would otherwise hold go test's output pipe open. It starts in the
// workers' folder, where the boot program writes pipeline_options.json.
const wrapper = `#!/bin/sh
id=${1#--id=}; id=${id#\'}; id=${id%%\'}; shift
cd %q && exec %q --id="$id" --semi_persist_dir=%q "$@" >>%q 2>&1
`

var (
	bootOnce  sync.Once
	bootBin   string
	bootDir   string
	bootErr   error
	bootStart time.Time
)

// ProcessEnvironment builds the boot program (once per process, into a
// temporary folder that Cleanup removes) and writes the wrapper into a
// temporary folder of t. It returns the --environment_config value of a
// PROCESS environment that runs them: {"command":"DIR/boot-wrapper"}.
// The workers' staged files go under DIR/workers, their output to
// DIR/workers.log. When t ends, the workers still running are stopped
// (StopWorkers).
func ProcessEnvironment(t testing.TB) (config string, err error) {
	dir := t.TempDir()
	t.Cleanup(func() {
		if n := StopWorkers(dir); n > 0 {
			t.Logf("stopped %d worker(s) left running by the PROCESS environment", n)
		}
	})
	bootOnce.Do(func() {
		bootStart = time.Now()
		tmp, err := os.MkdirTemp("", "runnertest-boot-")
		if err != nil {
			bootErr = err
			return
		}
		bootDir, bootBin = tmp, filepath.Join(tmp, "boot")
		if out, err := exec.Command("go", "build", "-o", bootBin, bootPackage).CombinedOutput(); err != nil {
			bootErr = fmt.Errorf("runnertest: go build %s: %v\n%s", bootPackage, err, out)
		}
	})
	if bootErr != nil {
		return "", bootErr
	}
	persist := filepath.Join(dir, "workers")
	if err := os.MkdirAll(persist, 0o755); err != nil {
		return "", err
	}
	cmd := filepath.Join(dir, "boot-wrapper")
	if err := os.WriteFile(cmd, fmt.Appendf(nil, wrapper, persist, bootBin, persist, filepath.Join(dir, "workers.log")), 0o755); err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]string{"command": cmd})
	return string(b), err
}

// Cleanup removes the boot program ProcessEnvironment built (for TestMain),
// and the copies of this test binary its workers ran from.
func Cleanup() {
	if bootDir == "" {
		return
	}
	os.RemoveAll(bootDir)
	self, err := os.Executable()
	if err != nil {
		return
	}
	for _, dir := range workerCopies(self, bootStart) {
		os.RemoveAll(dir)
	}
}

// workerCopies lists the folders where the boot program copied the worker
// binary self since start. The boot program of Beam v2.77.0 copies it into
// a new /tmp/bin* folder for every worker it starts and never removes it
// (container/boot.go: os.MkdirTemp("/tmp/", "bin*"), whatever TMPDIR says):
// the size of this binary, 246 MB, per worker, 60 of them after two runs of
// the tests. A folder counts when its worker was written since start and is
// as large as self (the worker binary a Go job stages is the program that
// submitted it).
func workerCopies(self string, start time.Time) []string {
	want, err := os.Stat(self)
	if err != nil {
		return nil
	}
	dirs, _ := filepath.Glob("/tmp/bin*")
	var out []string
	for _, dir := range dirs {
		fi, err := os.Stat(filepath.Join(dir, "worker"))
		if err == nil && fi.Mode().IsRegular() && fi.Size() == want.Size() && !fi.ModTime().Before(start) {
			out = append(out, dir)
		}
	}
	return out
}

// StopWorkers kills the workers of the PROCESS environment in dir that are
// still running, and returns how many. prism v2.77.0 ends an environment by
// killing the process it started, the boot program; the worker the boot
// program started is left running, an orphan of init (still running more
// than a minute after the job server's process had exited), holding about
// 90 MB of memory and its 246 MB copy of the test binary
// (removed from /tmp by Cleanup, but not freed while it runs). A worker is
// known by its --semi_persist_dir, which names dir. Linux only (/proc).
func StopWorkers(dir string) int {
	arg := []byte("--semi_persist_dir=" + filepath.Join(dir, "workers"))
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	stopped := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for a := range bytes.SplitSeq(cmdline, []byte{0}) {
			if !bytes.Equal(a, arg) {
				continue
			}
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() && syscall.Kill(pid, syscall.SIGKILL) == nil {
				stopped++
			}
			break
		}
	}
	return stopped
}
