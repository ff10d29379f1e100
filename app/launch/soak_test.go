//go:build soak

package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// TestSoak streams generated traffic into a followed folder for
// SOAK_DURATION (default 10m), SIGKILLs the real binary and restarts it every
// SOAK_RESTART_EVERY (default 2m30s), stops it gracefully at the end, then
// lets a replay close every window, and checks SPEC §8: the rows equal the
// offline oracle's, no changelog went backwards, every audit row exists once,
// and the runs that ended normally held the conservation identity (the
// binary exits 1 otherwise).
//
//	go test -tags soak -run TestSoak -timeout 40m -v ./app/launch
func TestSoak(t *testing.T) {
	duration := envDuration(t, "SOAK_DURATION", 10*time.Minute)
	restartEvery := envDuration(t, "SOAK_RESTART_EVERY", 150*time.Second)
	bin := buildBinary(t)

	staging := filepath.Join(t.TempDir(), "staging")
	c := gen.Demo()
	c.FilesPerPartition = 60
	if _, err := gen.Write(staging, c); err != nil {
		t.Fatal(err)
	}
	files := stagedFiles(t, staging)
	live := filepath.Join(t.TempDir(), "live")
	for _, p := range []string{"p0", "p1", "p2", "p3"} {
		if err := os.MkdirAll(filepath.Join(live, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "revenue.db")
	// No partition may go idle on the wall clock while the soak feeds a
	// historical log: idleness would push the watermark to now - bound.
	args := []string{"--source=" + live, "--follow", "--sink=sqlite:" + db, "--idle-timeout=24h", "--early=10s", "--log-level=warn"}

	start := func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	cmd := start()
	every := duration / time.Duration(len(files))
	nextRestart := time.Now().Add(restartEvery)
	kills := 0
	for i, f := range files {
		rel, _ := filepath.Rel(staging, f)
		dst := filepath.Join(live, rel)
		tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dst); err != nil { // producers rename files in
			t.Fatal(err)
		}
		time.Sleep(every)
		if time.Now().After(nextRestart) && i < len(files)-1 {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			kills++
			t.Logf("%v: SIGKILL after %d of %d files; restarting", time.Now().Format(time.TimeOnly), i+1, len(files))
			cmd = start()
			nextRestart = time.Now().Add(restartEvery)
		}
	}
	time.Sleep(5 * time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the followed run stopped with %v (exit 1 is a broken conservation identity)", err)
	}
	// A replay closes every window (watermark to the end of time).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	final := exec.CommandContext(ctx, bin, "--source="+live, "--sink=sqlite:"+db, "--log-level=warn")
	if out, err := final.CombinedOutput(); err != nil {
		t.Fatalf("closing replay failed: %v\n%s", err, out)
	}

	want, err := oracle.Replay(live, oracle.DefaultSettings(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, db)
	var wantRows, gotRows []string
	for k, v := range want.Final {
		wantRows = append(wantRows, fmt.Sprintf("%d %s %d n=%d FINAL", k.WindowStart, k.Dims, v.RevenueMicros, v.Count))
	}
	for _, r := range got.current {
		gotRows = append(gotRows, fmt.Sprintf("%d %s %d n=%d %s", r.WindowStart, r.Dims, r.RevenueMicros, r.EventCount, r.State))
	}
	sort.Strings(wantRows)
	sort.Strings(gotRows)
	if !slices.Equal(gotRows, wantRows) {
		t.Errorf("after %d kills the rows differ from the oracle:\n got %v\nwant %v", kills, gotRows, wantRows)
	}
	checkMonotone(t, got.changelog)
	for name, n := range map[string]int{"too_late_events": len(want.TooLate), "conflict_events": len(want.Conflicts), "quarantined_events": len(want.Quarantined)} {
		if got.audit[name] != n {
			t.Errorf("%s: %d rows, the oracle has %d", name, got.audit[name], n)
		}
	}
	t.Logf("soak: %d files over %v, %d kills, %d windows, %d revisions", len(files), duration, kills, len(got.current), len(got.changelog))
}

func stagedFiles(t *testing.T, dir string) []string {
	t.Helper()
	byPart := map[string][]string{}
	var parts []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		parts = append(parts, e.Name())
		fs, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(fs)
		byPart[e.Name()] = fs
	}
	sort.Strings(parts)
	// Round-robin over the partitions: each advances at the same pace.
	var out []string
	for i := 0; ; i++ {
		added := false
		for _, p := range parts {
			if i < len(byPart[p]) {
				out = append(out, byPart[p][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}
