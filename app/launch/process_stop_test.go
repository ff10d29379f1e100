package launch

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// stopObjects lists the stop requests in a control folder.
func stopObjects(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "stop-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestProcessGracefulStop stops a --follow run whose readers run in other
// processes (a PROCESS environment, as on Flink): the launcher's stop
// request reaches them only through the filesystem. A file that appears
// after the request, which would close [10:00, 11:00) if it were read, is
// not read: no FINAL row, read 4, conservation holds, the job is cancelled
// and Run returns cleanly. A restart on the same sink then gives the rows
// and audit rows of a clean run over the whole log.
func TestProcessGracefulStop(t *testing.T) {
	if testing.Short() {
		t.Skip("three jobs through a PROCESS environment")
	}
	dir := writeLog(t,
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T10:20:00Z", "u2", "50"),
		purchase("X", "2026-11-04T11:20:00Z", "u3", "1"), // watermark 11:10: ON_TIME for [10:00, 11:00)
	)
	o := processRunner(t, options(t, dir))
	o.Follow = true
	o.Pipeline.Triggers.Early = 0 // EARLY rows follow processing time; the clean run has none
	o.Pipeline.Triggers.AllowedLateness = time.Hour
	o.PollInterval = 100 * time.Millisecond
	// Long enough for a reader that missed the request to read the file
	// put after it, and so to fail the test.
	o.QuietPeriod = 3 * time.Second
	control := filepath.Join(dir, controlName)

	readers := watchReaders(t)
	job := runInBackground(t, o)
	ws := ms("2026-11-04T10:00:00Z")
	waitForRow(t, o.Sink.Path, "ON_TIME", func(r model.Row) bool { return r.WindowStart == ws && r.State == model.OnTime })
	appendFile(t, dir, "000002.jsonl", purchase("C", "2026-11-04T10:50:00Z", "u4", "20")) // late, within lateness
	waitForRow(t, o.Sink.Path, "LATE", func(r model.Row) bool { return r.WindowStart == ws && r.State == model.Late })
	if objs := stopObjects(t, control); len(objs) != 0 {
		t.Fatalf("stop objects before the stop: %v", objs)
	}

	// The stop, as SIGINT: the launcher writes the run's stop object.
	job.stop()
	stopped := time.Now()
	waitUntil(t, 10*time.Second, "the stop object", func() bool { return len(stopObjects(t, control)) == 1 })
	// A reader call after the stop has ended (a committed counter, set in
	// the worker process): every later call of the partition sees the stop
	// and reads no other file. Z would move the watermark to 12:20, past the
	// close of [10:00, 11:00).
	waitUntil(t, 30*time.Second, "a reader call after the stop", func() bool { return readers.counter(metrics.StoppedCalls) > 0 })
	appendFile(t, dir, "000003.jsonl", purchase("Z", "2026-11-04T12:30:00Z", "u5", "3"))

	var r runResult
	select {
	case r = <-job.done:
	case <-time.After(90 * time.Second):
		t.Fatal("Run did not return within 90s of the stop")
	}
	t.Logf("Run returned %v after the stop", time.Since(stopped))
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, job.out.String())
	}
	sum := r.sum
	if sum.State != StateCancelled || !sum.Interrupted {
		t.Errorf("state %s, interrupted %v; want CANCELLED, interrupted", sum.State, sum.Interrupted)
	}
	wantCounts(t, sum, 4, 4, 0, 0, 0, 0) // Z not read, nothing in flight at the cancel
	for _, row := range sum.Changelog() {
		if row.State == model.Final {
			t.Errorf("FINAL row after a graceful stop: %s revision %d\n%s", row.Key(), row.Revision, job.out.String())
		}
	}
	if !strings.Contains(job.out.String(), ": holds") {
		t.Errorf("summary after the stop:\n%s", job.out.String())
	}
	if objs := stopObjects(t, control); len(objs) != 0 {
		t.Errorf("the run left its stop object: %v", objs)
	}

	// The restart (a replay now) on the same sink, and a clean replay of
	// the same log into a new one, both through the PROCESS environment.
	ro := o
	ro.Follow, ro.QuietPeriod = false, 0
	restarted, _ := run(t, ro)
	clean := ro
	clean.Sink.Path = filepath.Join(t.TempDir(), "clean.db")
	cleanSum, _ := run(t, clean)
	for name, s := range map[string]*Summary{"restart": restarted, "clean": cleanSum} {
		if !s.Conserved || s.State != StateDone {
			t.Errorf("%s: state %s, conserved %v (%s)", name, s.State, s.Conserved, s.Identity)
		}
	}
	want, got := readAll(t, clean.Sink.Path), readAll(t, o.Sink.Path)
	if !slices.Equal(values(got.current), values(want.current)) {
		t.Errorf("rows after stop and restart differ from a clean run:\n got %v\nwant %v", values(got.current), values(want.current))
	}
	if len(want.current) != 3 {
		t.Errorf("clean run: %d current rows, want 3 windows:\n%v", len(want.current), values(want.current))
	}
	checkMonotone(t, got.changelog)
	if !maps.Equal(got.audit, want.audit) {
		t.Errorf("audit rows after stop and restart %v, clean run %v", got.audit, want.audit)
	}
}
