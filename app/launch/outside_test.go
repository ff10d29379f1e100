package launch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

// flinkLikeJobServer starts prism's job server behind a proxy that answers as
// Flink's job server does: no metrics while a job runs.
func flinkLikeJobServer(t *testing.T) (*runnertest.JobServer, *runnertest.NoLiveMetrics) {
	t.Helper()
	js, err := runnertest.StartJobServer()
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := runnertest.StartNoLiveMetrics(js.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	return js, proxy
}

// outsideJob runs a follower of two records on prism's job server behind a
// proxy that answers as Flink's job server does (no live metrics; with
// failCancel, every Cancel fails) and returns it once prism shows both
// records judged, with the proxy and the job as found on the job server.
func outsideJob(t *testing.T, failCancel bool) (*backgroundRun, *runnertest.NoLiveMetrics, *jobFigures) {
	js, proxy := flinkLikeJobServer(t)
	proxy.FailCancel.Store(failCancel)
	endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
	name := fmt.Sprintf("outside-%d", time.Now().UnixNano())
	*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.JobName = proxy.Endpoint, "LOOPBACK", name
	t.Cleanup(func() { *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.JobName = endpoint, env, "" })
	o := options(t, writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"), purchase("B", "2026-11-04T10:20:00Z", "u2", "50")))
	o.Follow, o.ProgressEvery, o.StopTimeout, o.QuietPeriod = true, 0, 5*time.Second, 500*time.Millisecond
	j := runInBackground(t, o)
	waitUntil(t, time.Minute, "both records judged", func() bool {
		if j.ended() {
			j.fail(t, "the follower ended by itself")
		}
		return judgedAt(js.Endpoint, name) == 2
	})
	jf := &jobFigures{name: name, endpoint: js.Endpoint}
	t.Cleanup(jf.close)
	if jf.metrics(context.Background(), liveLook) == nil {
		t.Fatal("the job is not found on the job server")
	}
	return j, proxy, jf
}

// TestCancelledOutsideIsNotDone: a job cancelled outside the launcher
// (Flink's UI, `flink cancel`) ends beam.Run without an error, as Beam's
// universal runner returns nil for CANCELLED, so the launcher summarised
// it DONE and exited 0 (a replay could seal on it too). It is CANCELLED,
// not a stop the launcher asked for, with an error (exit 1).
func TestCancelledOutsideIsNotDone(t *testing.T) {
	j, _, jf := outsideJob(t, false)
	if err := jf.cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := j.wait(t, time.Minute, "the cancel")
	want := "job " + jf.found() + ": cancelled outside the launcher"
	if r.sum == nil || r.sum.State != StateCancelled || r.sum.Interrupted || r.err == nil || !strings.HasPrefix(r.err.Error(), want) || !strings.HasPrefix(r.sum.Error, want) {
		t.Fatalf("Run: err %v, summary %+v; want CANCELLED, not interrupted, and an error starting %q\n%s", r.err, r.sum, want, j.out.String())
	}
	wantCounts(t, r.sum, 2, 2, 0, 0, 0, 0)
	var cfg *ConfigError
	if errors.As(r.err, &cfg) {
		t.Errorf("Run's error %v is a ConfigError (exit 2), want exit 1", r.err)
	}
}

// TestStopWhoseCancelFailsSaysTheJobMayRun: when the graceful stop's
// Cancel through the job service fails, the launcher only stops waiting
// (its own context), which does not stop a job on Flink. It must not claim
// the job was cancelled: it names the job, says it may still be running
// and where, and fails.
func TestStopWhoseCancelFailsSaysTheJobMayRun(t *testing.T) {
	j, proxy, jf := outsideJob(t, true)
	defer jf.cancel(context.Background()) // the job the launcher left
	j.stop()
	r := j.wait(t, time.Minute, "the stop")
	want := fmt.Sprintf("job %s may still be running on the job service at %s", jf.found(), proxy.Endpoint)
	if r.err == nil || !strings.Contains(r.err.Error(), want) || strings.Contains(j.out.String(), "the job was cancelled") {
		t.Fatalf("Run: err %v; want an error saying %q and no claim that the job was cancelled\n%s", r.err, want, j.out.String())
	}
}
