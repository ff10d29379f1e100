package launch

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/gcstest"
	"github.com/revenue-stream/hourly/testing/s3test"
)

// TestPubSubArchiveOnObjectStore is the kill-and-restart scenario with
// --pubsub-archive on a real object-store API: gs:// on fake-gcs-server
// and s3:// on gofakes3, both serving from this process, reached by the
// launcher (a child process) through STORAGE_EMULATOR_HOST and
// AWS_ENDPOINT_URL_S3. Killed after archiving a batch but before
// acknowledging it, Pub/Sub redelivers the batch; killed after
// acknowledging it but before emitting it, only the archive has it, and the
// restart must re-emit it from the bucket. Either way the rows equal the
// oracle's, every message is a line of an archive object with its id
// sidecar, and reconcile reading the archive from the bucket finds nothing
// to correct.
func TestPubSubArchiveOnObjectStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the launcher as a child process")
	}
	k := newKillRun(t)
	var all []string
	for _, g := range k.groups {
		all = append(all, g...)
	}
	for _, tc := range []struct {
		store     string
		newBucket func(testing.TB) string
		point     string
	}{
		{"gs", gcstest.NewBucket, faults.PubSubAfterArchive},
		{"gs", gcstest.NewBucket, faults.PubSubAfterAck},
		{"s3", s3test.NewBucket, faults.PubSubAfterAck},
	} {
		t.Run(tc.store+"/"+tc.point, func(t *testing.T) {
			archive := tc.newBucket(t) + "/archive"
			db := k.run(t, tc.point, archive)

			lines := archivedLines(t, archive)
			slices.Sort(lines)
			distinct := slices.Compact(slices.Clone(lines))
			want := slices.Compact(slices.Sorted(slices.Values(all)))
			// A batch archived but not acknowledged is pulled and archived
			// again after the restart: lines may repeat, none may be missing.
			if !slices.Equal(distinct, want) || len(lines) < len(all) {
				t.Errorf("archive holds %d lines (%d distinct), want every one of the %d messages (%d distinct)",
					len(lines), len(distinct), len(all), len(want))
			}

			ro := reconcile.Defaults()
			ro.Source, ro.RunID = archive, "store"
			ro.Sink = sink.Spec{Scheme: sink.SchemeSQLite, Path: db}
			res, err := reconcile.Run(context.Background(), ro)
			if err != nil {
				t.Fatalf("reconcile --source=%s: %v", archive, err)
			}
			if res.Stats.Read != int64(len(lines)) || len(res.Diffs) != 0 {
				t.Errorf("reconcile of %s read %d records (archive lines: %d), found diffs %+v; want none",
					archive, res.Stats.Read, len(lines), res.Diffs)
			}
		})
	}
}

// archivedLines reads every line of every archive object under root (each
// reader key's partition), checking that each object has its id sidecar.
func archivedLines(t *testing.T, root string) []string {
	t.Helper()
	ctx := context.Background()
	top, err := files.List(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Dirs) == 0 {
		t.Fatalf("no archive partition under %s: %+v", root, top)
	}
	var lines []string
	for _, part := range top.Dirs {
		l, err := files.List(ctx, files.Join(root, part))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range l.Files {
			if strings.HasPrefix(name, ".") {
				continue // sidecars
			}
			if !slices.Contains(l.Files, rawlog.SidecarName(name)) {
				t.Errorf("%s/%s has no id sidecar %s", part, name, rawlog.SidecarName(name))
			}
			rc, err := files.Open(ctx, files.Join(root, part, name), 0)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		}
	}
	return lines
}

// TestObjectStoresAreSharedOffProcess: on a runner whose workers run
// elsewhere, a gs:// or s3:// source and Pub/Sub archive are reachable by
// every worker, so they pass where a local path is refused.
func TestObjectStoresAreSharedOffProcess(t *testing.T) {
	reset := runnerFlags(t)
	for _, bucket := range []string{"gs://b", "s3://b"} {
		reset()
		o, err := Parse([]string{"--runner=dataflow", "--sink=bigquery:my-project.d", "--source=" + bucket + "/raw"})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.placement(); err != nil {
			t.Errorf("--source=%s/raw on dataflow refused: %v", bucket, err)
		}
		reset()
		o, err = Parse([]string{"--runner=dataflow", "--sink=bigquery:my-project.d",
			"--source=pubsub:" + testSub, "--pubsub-archive=" + bucket + "/archive"})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("--pubsub-archive=%s/archive on dataflow refused: %v", bucket, err)
		}
	}
	// The control: the same archive on local disk is refused.
	reset()
	o, err := Parse([]string{"--runner=dataflow", "--sink=bigquery:my-project.d", "--source=pubsub:" + testSub, "--pubsub-archive=archive"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil {
		t.Error("a local archive on dataflow passed")
	}
}
