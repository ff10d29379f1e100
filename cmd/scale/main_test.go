package main

import (
	"os"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/testing/cmdtest"
)

// The exit code and the one line on stderr are the command's contract, so the tests run the real
// binary: this test binary re-executed with SCALE_MAIN=1 is main.
func TestMain(m *testing.M) {
	if os.Getenv("SCALE_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func scale(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cmdtest.Run(t, "", "SCALE_MAIN", args...)
}

// Every bad flag, value or argument is refused before anything is simulated: exit 2, nothing on
// stdout, one line on stderr naming what was wrong.
func TestScaleRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the line
	}{
		{[]string{"--no-such-flag"}, "unknown flag --no-such-flag"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--rates=20000", "extra"}, `unexpected argument "extra"`},
		{[]string{"--hours"}, "--hours: missing value"},
		{[]string{"--hours=0"}, "--hours"},
		{[]string{"--hours=-1"}, "--hours"},
		{[]string{"--hours=NaN"}, "--hours"},
		{[]string{"--hours=Inf"}, "--hours"},
		{[]string{"--hours=27"}, "--hours"},
		{[]string{"--hours=1001"}, "--hours"},
		{[]string{"--hours=many"}, "--hours"},
		{[]string{"--dup=2"}, "--dup"},
		{[]string{"--dup=1"}, "--dup"},
		{[]string{"--dup=-0.1"}, "--dup"},
		{[]string{"--dup=NaN"}, "--dup"},
		{[]string{"--worker-vcpus=0"}, "--worker-vcpus"},
		{[]string{"--worker-vcpus=-4"}, "--worker-vcpus"},
		{[]string{"--worker-vcpus=1.5"}, "--worker-vcpus"},
		{[]string{"--worker-memory-gib=-5"}, "--worker-memory-gib"},
		{[]string{"--worker-memory-gib=0"}, "--worker-memory-gib"},
		{[]string{"--worker-memory-gib=1"}, "--worker-memory-gib"},
		{[]string{"--worker-memory-gib=NaN"}, "--worker-memory-gib"},
		{[]string{"--worker-memory-gib=+Inf"}, "--worker-memory-gib"},
		{[]string{"--worker-memory-gib=1e300"}, "--worker-memory-gib"},
		{[]string{"--vcpu-rate=0"}, "--vcpu-rate"},
		{[]string{"--vcpu-rate=-10000"}, "--vcpu-rate"},
		{[]string{"--vcpu-rate=NaN"}, "--vcpu-rate"},
		{[]string{"--checkpoint-interval=0s"}, "--checkpoint-interval"},
		{[]string{"--checkpoint-interval=-1m"}, "--checkpoint-interval"},
		{[]string{"--checkpoint-interval=1"}, "--checkpoint-interval"},
		{[]string{"--upload-mbps=0"}, "--upload-mbps"},
		{[]string{"--upload-mbps=-100"}, "--upload-mbps"},
		{[]string{"--upload-mbps=Inf"}, "--upload-mbps"},
		{[]string{"--rates="}, "--rates"},
		{[]string{"--rates=0"}, "--rates"},
		{[]string{"--rates=20000,-1"}, "--rates"},
		{[]string{"--rates=20000,x"}, "--rates"},
		{[]string{"--rates=10000001"}, "--rates"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := scale(t, c.args...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != 2 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(stderr, "scale: ") || !strings.Contains(stderr, c.want) {
				t.Fatalf("scale %v: exit %d, stdout %q, stderr %q\nwant exit 2, no stdout, one line on stderr with %q", c.args, code, stdout, stderr, c.want)
			}
		})
	}
}

// The defaults, which docs/capacity.md publishes, are a good command line: exit 0, the plan on
// stdout, nothing on stderr.
func TestScaleDefaultPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 60 h of two design rates")
	}
	code, stdout, stderr := scale(t)
	if code != 0 || stderr != "" || !strings.Contains(stdout, "## Capacity plan") || !strings.Contains(stdout, "| Flink (RocksDB, incremental) | 20,000 |") {
		t.Fatalf("scale: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = scale(t, "--help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "--worker-memory-gib=GIB") {
		t.Fatalf("scale --help: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}
