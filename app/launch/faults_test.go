package launch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/faults"
)

// TestFaultsAtCommitBoundaries injects a failure at each commit boundary of
// the seed's test matrix into the real binary (built with the faults tag),
// then restarts it on the same sink: every event contributes once, the sink
// keeps only the highest revision per key and never goes backwards, and the
// final rows equal a clean run's (which the demo test ties to the offline
// recomputation). The clean run is the shipped binary with every point armed
// at its first pass: it must ignore REVENUE_FAULTS and finish.
func TestFaultsAtCommitBoundaries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary several times")
	}
	bin := buildFaultBinary(t)
	logDir := demoLog(t, 60_000)
	clean := filepath.Join(t.TempDir(), "clean.db")
	armAll := faults.CrashAfterRead + ":1," + faults.FailBeforeSinkWrite + ":1," + faults.CrashAfterSinkWrite + ":1"
	if out, code := runWithEnv(t, buildBinary(t), logDir, clean, armAll); code != 0 {
		t.Fatalf("the production binary with %s=%s exited %d (it must ignore the variable):\n%s", faults.Env, armAll, code, lastN(out, 15))
	}
	want := readAll(t, clean)

	for _, tc := range []struct {
		point string
		// at lists when to fire, latest first: how many sink batches a run
		// writes depends on bundling, so a later pass that never comes
		// falls back to an earlier one (the mid-run states are the
		// interesting ones).
		at []string
		// wantOut is what the failed run must say.
		wantOut string
	}{
		{faults.CrashAfterRead, []string{"58000", "30000"}, faults.CrashAfterRead + " fired"},
		{faults.FailBeforeSinkWrite, []string{"12", "6", "2"}, "injected permanent failure"},
		{faults.CrashAfterSinkWrite, []string{"12", "6", "2"}, faults.CrashAfterSinkWrite + " fired"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			var db string
			fired := false
			for _, n := range tc.at {
				db = filepath.Join(t.TempDir(), "revenue.db")
				out, code := runWithEnv(t, bin, logDir, db, tc.point+":"+n)
				if code == 0 {
					continue // the run ended before the n-th pass
				}
				if !strings.Contains(out, tc.wantOut) {
					t.Fatalf("faulty run exited %d; want a failure saying %q:\n%s", code, tc.wantOut, lastN(out, 15))
				}
				fired = true
				t.Logf("%s fired at pass %s", tc.point, n)
				break
			}
			if !fired {
				t.Fatalf("%s never fired at passes %v", tc.point, tc.at)
			}
			before := readAll(t, db)
			t.Logf("%s: the sink held %d of %d keys, %d of %d revisions", tc.point, len(before.current), len(want.current), len(before.changelog), len(want.changelog))
			if out, code := runWithEnv(t, bin, logDir, db, ""); code != 0 {
				t.Fatalf("restart exited %d:\n%s", code, lastN(out, 15))
			}
			got := readAll(t, db)
			if !slices.Equal(values(got.current), values(want.current)) {
				t.Errorf("rows after the restart differ from a clean run:\n got %v\nwant %v", values(got.current), values(want.current))
			}
			checkMonotone(t, got.changelog)
			for name, n := range want.audit {
				if got.audit[name] != n {
					t.Errorf("%s: %d rows after the restart, %d in a clean run", name, got.audit[name], n)
				}
			}
			wantSink(t, oracleOf(t, logDir), openSQLite(t, db))
		})
	}
}

// runWithEnv runs one replay with REVENUE_FAULTS set to fault (unset when
// empty) and returns its combined output and exit code (-1 when killed).
func runWithEnv(t *testing.T, bin, source, db, fault string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--source="+source, "--sink=sqlite:"+db, "--log-level=warn")
	cmd.Env = os.Environ()
	if fault != "" {
		cmd.Env = append(cmd.Env, faults.Env+"="+fault)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func lastN(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestBrokenConservationFails: a run whose counters break SPEC §4's
// identity (dedup drops the first duplicate without counting it) logs the
// failed check, prints the identity with "!=" and exits 1. The same log
// without the fault is the control: it conserves and exits 0.
func TestBrokenConservationFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary twice")
	}
	bin := buildFaultBinary(t)
	logDir := demoLog(t, 2_000)
	out, code := runWithEnv(t, bin, logDir, filepath.Join(t.TempDir(), "control.db"), "")
	if code != 0 || !strings.Contains(out, "conserved") && !strings.Contains(out, " = counted ") {
		t.Fatalf("control: exit %d, want 0 with the identity held:\n%s", code, lastN(out, 15))
	}
	out, code = runWithEnv(t, bin, logDir, filepath.Join(t.TempDir(), "revenue.db"), faults.UncountDuplicate+":1")
	if code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	for _, want := range []string{"conservation check failed", " != counted "} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, lastN(out, 20))
		}
	}
}
