package launch

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/gcstest"
)

// TestControlProbe: a streaming run probes its control folder before any
// work. Following a read-only gs:// raw log bucket without --control is one
// line on stderr naming the folder and suggesting --control, exit 2, and
// nothing is done: no sink is opened, no object written. A replay of the
// same bucket is not refused (it ends by itself), and the follow runs with
// --control on a bucket it may write, its probe and stop objects removed.
func TestControlProbe(t *testing.T) {
	readOnly, writable := gcstest.NewBucket(t), gcstest.NewBucket(t)
	local := writeLog(t,
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T10:20:00Z", "u2", "50"),
		purchase("X", "2026-11-04T11:20:00Z", "u3", "1"), // watermark 11:10: ON_TIME for [10:00, 11:00)
	)
	source := readOnly + "/raw"
	gcstest.Upload(t, local, source)
	gcstest.RefuseWrites(t, readOnly)
	objects := func(bucket, prefix string) []string {
		t.Helper()
		attrs, _, err := gcstest.Server(t).ListObjectsWithOptions(strings.TrimPrefix(bucket, "gs://"), fakestorage.ListOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range attrs {
			names = append(names, a.Name)
		}
		return names
	}

	t.Run("follow without --control: exit 2", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "revenue.db")
		var stdout, stderr bytes.Buffer
		// --duration ends the run should the probe let it start: the
		// test then fails rather than hangs.
		args := []string{"--source=" + source, "--follow", "--duration=5s", "--sink=sqlite:" + db}
		code := Main(args, &stdout, &stderr)
		msg := stderr.String()
		t.Logf("stderr: %s", msg)
		want := "launch: the graceful stop cannot write its request to " + source + "/_control: "
		if code != ExitUsage || !strings.HasPrefix(msg, want) || strings.Count(msg, "\n") != 1 ||
			!strings.HasSuffix(msg, "(pass --control=FOLDER the launcher can write, e.g. --control=gs://BUCKET/PATH)\n") ||
			!strings.Contains(msg, "403") || stdout.Len() != 0 {
			t.Errorf("launch %v: exit %d, stdout %q, stderr %q\nwant exit 2 and one line starting %q, with the store's 403 and the --control hint",
				args, code, stdout.String(), msg, want)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("the sink %s was opened before the refusal: %v", db, err)
		}
		if left := objects(readOnly, "raw/_control"); len(left) != 0 {
			t.Errorf("objects written to the read-only bucket: %v", left)
		}
	})

	t.Run("replay without --control: runs", func(t *testing.T) {
		sum, _ := run(t, options(t, source))
		wantCounts(t, sum, 3, 3, 0, 0, 0, 0)
		if sum.State != StateDone {
			t.Errorf("state %s, want DONE", sum.State)
		}
	})

	t.Run("follow with --control on a writable bucket", func(t *testing.T) {
		sum := followAndStop(t, source, writable+"/control")
		if sum.State != StateCancelled {
			t.Errorf("state %s, want CANCELLED", sum.State)
		}
		wantCounts(t, sum, 3, 3, 0, 0, 0, 0)
		if left := objects(writable, "control/"); len(left) != 0 {
			t.Errorf("control objects left after the run: %v; want the probe and the stop object removed", left)
		}
	})
}

// TestStopSignalProbeOnGCS: the probe writes and removes its object through
// the gs:// filesystem, and fails on a bucket that refuses writes; an
// interruption during the probe is reported as such.
func TestStopSignalProbeOnGCS(t *testing.T) {
	ctx := context.Background()
	writable, readOnly := gcstest.NewBucket(t), gcstest.NewBucket(t)
	gcstest.RefuseWrites(t, readOnly)
	o := Defaults()
	o.Follow = true
	for _, tc := range []struct {
		control string
		ok      bool
	}{{writable + "/raw/_control", true}, {readOnly + "/raw/_control", false}} {
		o.Control = tc.control
		signal, err := o.stopSignal(ctx, "", true)
		if (err == nil) != tc.ok {
			t.Errorf("--control=%s: %v; want ok %v", tc.control, err, tc.ok)
		}
		if _, err := files.Size(ctx, signal.ProbePath()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("probe object %s after the probe: %v; want it absent", signal.ProbePath(), err)
		}
	}
	// Ctrl-C during the probe is an interruption, not a folder to replace.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	o.Control = writable + "/raw/_control"
	if _, err := o.stopSignal(cancelled, "", true); err == nil || !strings.HasPrefix(err.Error(), "interrupted before the job started") {
		t.Errorf("probe with a cancelled context: %v; want the interruption", err)
	}
}

// TestStopObjectRemovedOnMemfs: a follow stopped as SIGINT does, with its
// control folder on memfs://, leaves nothing there: the probe and the stop
// object are both removed (memfs's own keys are listed, not looked up
// through its normalising Size).
func TestStopObjectRemovedOnMemfs(t *testing.T) {
	dir := writeLog(t,
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("X", "2026-11-04T11:20:00Z", "u3", "1"),
	)
	control := "memfs://" + t.Name() + "/control"
	sum := followAndStop(t, dir, control)
	wantCounts(t, sum, 2, 2, 0, 0, 0, 0)
	if sum.State != StateCancelled {
		t.Errorf("state %s, want CANCELLED", sum.State)
	}
	left, err := memfs.New(context.Background()).List(context.Background(), control+"/*")
	if err != nil || len(left) != 0 {
		t.Errorf("memfs control folder after the run: %v (%v); want the stop object removed", left, err)
	}
}

// followAndStop follows source with its stop requests under control, waits
// for the 10:00 window's ON_TIME row and stops the run gracefully.
func followAndStop(t *testing.T, source, control string) *Summary {
	t.Helper()
	o := options(t, source)
	o.Follow = true
	o.Control = control
	o.Pipeline.Triggers.Early = time.Second // as TestInterruptedFollow: the firing comes within seconds
	o.PollInterval = 100 * time.Millisecond
	o.QuietPeriod = 500 * time.Millisecond
	job := runInBackground(t, o)
	ws := ms("2026-11-04T10:00:00Z")
	waitForRow(t, o.Sink.Path, "ON_TIME", func(r model.Row) bool { return r.WindowStart == ws && r.State == model.OnTime })
	sum, _ := job.stopAndWait(t, 60*time.Second)
	return sum
}
