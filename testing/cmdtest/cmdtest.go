// Package cmdtest runs a command as a user does, in a process of its own:
// its exit code and the lines it writes are its contract. The test binary
// is the command when re-executed with an environment variable set, which
// the test's TestMain checks before m.Run.
package cmdtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// Run re-executes this test binary in dir ("" for the test's own) with
// env=1 and args, and returns the exit code, stdout and stderr.
func Run(t testing.TB, dir, env string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}
