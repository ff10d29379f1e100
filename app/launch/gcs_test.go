package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/gcstest"
	"github.com/revenue-stream/hourly/testing/s3test"
)

// objectStore is one object store's test server: a fresh bucket
// ("gs://B", "s3://B"), a folder copied under a prefix, an object read back.
type objectStore struct {
	newBucket func(testing.TB) string
	upload    func(t testing.TB, dir, prefix string)
	get       func(t testing.TB, path string) []byte
}

// TestSourceOnGCS is `go run ./cmd/launch --source=gs://B/raw` against a GCS
// JSON API server (fake-gcs-server, in this process): the same files give
// the same rows, audit rows and counts as on local disk, the report is
// written to the bucket, and reconcile --source=gs://B/raw finds what it
// finds on the local copy.
func TestSourceOnGCS(t *testing.T) {
	testSourceOnObjectStore(t, objectStore{gcstest.NewBucket, gcstest.Upload, gcstest.Get})
}

// TestSourceOnS3 is the same with --source=s3://B/raw against an S3 API
// server (gofakes3, in this process), reached through AWS_ENDPOINT_URL_S3.
func TestSourceOnS3(t *testing.T) {
	testSourceOnObjectStore(t, objectStore{s3test.NewBucket, s3test.Upload, s3test.Get})
}

func testSourceOnObjectStore(t *testing.T, store objectStore) {
	bucket := store.newBucket(t)
	ctx := context.Background()

	t.Run("minimal sequence", func(t *testing.T) {
		local := writeLog(t, minimalLog...)
		remote := bucket + "/minimal"
		store.upload(t, local, remote)
		for _, source := range []string{local, remote} {
			o := stepping(options(t, source))
			sum, _ := run(t, o)
			wantCounts(t, sum, 8, 5, 1, 1, 0, 1)
			assertRows(t, source+": hourly_revenue_changelog", sum.Changelog(), minimalChangelog)
			wantMinimalAudit(t, sqliteOf(t, o))
		}
	})

	t.Run("demo log through Main, then reconcile", func(t *testing.T) {
		local := demoLog(t, 20_000)
		remote := bucket + "/raw"
		store.upload(t, local, remote)
		dir := t.TempDir()
		main := func(source, db string, extra ...string) {
			t.Helper()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--source=" + source, "--sink=sqlite:" + db}, extra...)
			if code := Main(args, &stdout, &stderr); code != ExitOK {
				t.Fatalf("launch %v: exit %d\n%s\n%s", args, code, stdout.String(), stderr.String())
			}
		}
		localDB, remoteDB := filepath.Join(dir, "local.db"), filepath.Join(dir, "remote.db")
		main(local, localDB)
		main(remote, remoteDB, "--report="+bucket+"/reports/run.json")

		// The minimal sequence above compares audit rows one by one; here
		// their numbers, and each key's value and state.
		l, r := readAll(t, localDB), readAll(t, remoteDB)
		if !slices.Equal(values(r.current), values(l.current)) {
			t.Errorf("hourly_revenue differs:\n %s %v\n local %v", bucket, values(r.current), values(l.current))
		}
		if !maps.Equal(r.audit, l.audit) {
			t.Errorf("audit tables differ: %s %v, local %v", bucket, r.audit, l.audit)
		}
		if len(l.current) == 0 || l.audit["too_late_events"] == 0 || l.audit["quarantined_events"] == 0 {
			t.Errorf("the demo log should exercise every table: %d rows, audit %v", len(l.current), l.audit)
		}

		var rep report.Document
		if err := json.Unmarshal(store.get(t, bucket+"/reports/run.json"), &rep); err != nil || rep.Counts == nil {
			t.Fatalf("report on %s: %v", bucket, err)
		}
		if !rep.Conservation.Holds || rep.Counts.Read < 20_000 {
			t.Errorf("report on %s: %+v", bucket, rep)
		}

		recon := func(source, db string) reconcile.Outcome {
			t.Helper()
			ro := reconcile.Defaults()
			ro.Source, ro.RunID = source, "gcs"
			ro.Sink = sink.Spec{Scheme: sink.SchemeSQLite, Path: db}
			res, err := reconcile.Run(ctx, ro)
			if err != nil {
				t.Fatalf("reconcile --source=%s: %v", source, err)
			}
			return res
		}
		lr, rr := recon(local, localDB), recon(remote, remoteDB)
		if lr.Stats.Read == 0 || len(lr.Diffs) == 0 {
			t.Errorf("reconcile of the local log read %d records, found %d diffs: the test shows nothing", lr.Stats.Read, len(lr.Diffs))
		}
		if fmt.Sprint(rr.Stats) != fmt.Sprint(lr.Stats) {
			t.Errorf("reconcile stats differ:\n %s %+v\n local %+v", bucket, rr.Stats, lr.Stats)
		}
		if fmt.Sprint(rr.Diffs) != fmt.Sprint(lr.Diffs) {
			t.Errorf("reconcile diffs differ:\n %s %+v\n local %+v", bucket, rr.Diffs, lr.Diffs)
		}
	})
}
