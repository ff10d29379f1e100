package launch

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

// processRunner points the runner flags at a prism job server this test
// process started, with a PROCESS environment: every SDK worker is another
// process (the boot program, which fetches the staged worker binary — this
// test binary — and runs it), as on a Flink task manager. Nothing the
// launcher holds in memory reaches the workers, and nothing they hold comes
// back but the runner's metrics and what they wrote to the sink.
func processRunner(t *testing.T, o Options) Options {
	t.Helper()
	js, err := runnertest.StartJobServer()
	if err != nil {
		t.Fatal(err)
	}
	config, err := runnertest.ProcessEnvironment(t)
	if err != nil {
		t.Fatal(err)
	}
	endpoint, env, envConfig := *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig
	t.Cleanup(func() {
		*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig = endpoint, env, envConfig
	})
	*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig = js.Endpoint, "PROCESS", config
	// A prism job server at --endpoint: --runner=prism submits to it, and
	// its workarounds (the metric gate) go with the job into the workers.
	// --runner=universal would name an unknown job server and submit none.
	o.Runner = "prism"
	// The job server and its workers run on this machine: they see the
	// test's folders and SQLite file.
	o.SharedFilesystem = true
	o.ProgressEvery = 0
	return o
}

func TestProcessMinimalSequence(t *testing.T) {
	o := processRunner(t, stepping(options(t, writeLog(t, minimalLog...))))
	sum, out := run(t, o)
	// Every figure is the runner's: the workers' counters reached the
	// launcher only through the job service.
	wantCounts(t, sum, 8, 5, 1, 1, 0, 1)
	for _, want := range []string{
		"read 8 = counted 5 + duplicates 1 + conflicts 1 + quarantined 0 + too_late 1: holds",
		"rows emitted: ON_TIME 3, LATE 1, FINAL 3; sink accepted 7 revisions, 0 stale; 2 audit rows inserted",
		"now holds 3 windows (FINAL 3) and 7 revisions",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	assertRows(t, "hourly_revenue_changelog", sum.Changelog(), minimalChangelog)
	wantMinimalAudit(t, sqliteOf(t, o))
}

// TestProcessDemo: the demo through a PROCESS environment gives the
// oracle's FINAL rows, figures and audit tables, as in-process (TestDemo);
// then reconcile, through a PROCESS environment too, finds what it finds
// in-process against the same sink.
func TestProcessDemo(t *testing.T) {
	o := options(t, "")
	o.DemoDir = filepath.Join(t.TempDir(), "demo-data")
	o = processRunner(t, o)
	sum, _ := run(t, o)
	wantDemo(t, o, sum)

	rec := reconcile.Defaults()
	rec.Source, rec.Sink, rec.Top = o.DemoDir, o.Sink, 0
	rec.Now = time.Now()
	// In-process first: prism started by reconcile, LOOPBACK.
	endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
	*jobopts.Endpoint, *jobopts.EnvironmentType = "", ""
	inProcess, err := reconcile.Run(context.Background(), rec)
	*jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, env
	if err != nil {
		t.Fatalf("reconcile in-process: %v", err)
	}
	runner := *runners.Runner
	t.Cleanup(func() { *runners.Runner = runner })
	*runners.Runner = "prism"
	rec.Runner, rec.EnvironmentType, rec.SharedFilesystem = "prism", "PROCESS", true
	elsewhere, err := reconcile.Run(context.Background(), rec)
	if err != nil {
		t.Fatalf("reconcile through a PROCESS environment: %v", err)
	}
	if len(inProcess.Diffs) == 0 {
		t.Fatal("reconcile found no differences in-process: the demo's too-late events should show")
	}
	if got, want := fmt.Sprint(elsewhere.Diffs), fmt.Sprint(inProcess.Diffs); got != want || !maps.Equal(elsewhere.Counters, inProcess.Counters) ||
		!elsewhere.CountersFromRunner || elsewhere.ExitCode() != inProcess.ExitCode() {
		t.Errorf("reconcile through a PROCESS environment: exit %d, counters %v (from the runner: %v), diffs\n%s\nin-process: exit %d, counters %v, diffs\n%s",
			elsewhere.ExitCode(), elsewhere.Counters, elsewhere.CountersFromRunner, got, inProcess.ExitCode(), inProcess.Counters, want)
	}
}

// TestProcessDemoProductionShards: the demo through a PROCESS environment
// with the dedup shards the launcher sizes for a distributed runner at the
// design rate (2,048 at 20,000 ev/s, docs/capacity.md), rehearsing Flink
// (position order): most source bundles now touch hundreds of dedup keys
// that each hold a few ids, and the sink still holds the oracle's FINAL
// rows and audit rows, conserved. Every key was loaded from the runner's
// state at least once (the reload counter), which a run on prism's 8 shards
// cannot show (16 reloads in the demo): the shard count is the one asked.
func TestProcessDemoProductionShards(t *testing.T) {
	if testing.Short() {
		t.Skip("a PROCESS-environment demo run")
	}
	shards := pipeline.Defaults().Sized("flink", 0).DedupShards
	if shards != 2048 {
		t.Fatalf("the launcher sizes %d dedup shards for Flink at the design rate, want 2,048 (docs/capacity.md)", shards)
	}
	o, err := Parse([]string{"--rehearse=flink", fmt.Sprintf("--dedup-shards=%d", shards),
		"--sink=sqlite:" + filepath.Join(t.TempDir(), "revenue.db")})
	if err != nil {
		t.Fatal(err)
	}
	o.DemoDir = filepath.Join(t.TempDir(), "demo-data")
	o = processRunner(t, o)
	sum, _ := run(t, o)
	wantDemo(t, o, sum)
	if o.Pipeline.DedupOrder != pipeline.OrderPosition {
		t.Errorf("--rehearse=flink ran --dedup-order=%s, want position", o.Pipeline.DedupOrder)
	}
	if reloads := sum.Counts.Counters[string(metrics.DedupStateReloads)]; reloads < int64(shards) {
		t.Errorf("%d dedup shard loads from the runner's state, want at least one for each of the %d shards", reloads, shards)
	}
}
