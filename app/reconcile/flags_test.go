package reconcile_test

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/revenue-stream/hourly/app/reconcile"
)

func parse(args ...string) (reconcile.Options, error) {
	o, err := reconcile.Parse(args)
	if err != nil {
		return o, err
	}
	return o, o.Validate()
}

func TestFlags(t *testing.T) {
	o, err := parse("--source=log", "--sink=sqlite:x.db", "--date=2026-11-04", "--apply", "--tolerance=0.01",
		"--report=r.HTML", "--dimensions=country,platform", "--window=30m", "--allowed-lateness=2h", "--max-age=48h",
		"--max-line=512KiB")
	if err != nil {
		t.Fatal(err)
	}
	if o.Source != "log" || o.Sink.Path != "x.db" || !o.Apply || o.ToleranceMicros != 10_000 || o.Report != "r.HTML" ||
		o.Triggers.Window != 30*time.Minute || o.Triggers.AllowedLateness != 2*time.Hour || o.Event.MaxAge != 48*time.Hour || o.Event.MaxLine != 512<<10 ||
		strings.Join(o.Event.Dimensions, ",") != "country,platform" || o.Range.String() != "[2026-11-04T00:00:00Z, 2026-11-05T00:00:00Z)" {
		t.Errorf("options = %+v", o)
	}
	if cfg := o.RunConfig(); cfg["window"] != "30m0s" || cfg["dimensions"] != "country,platform" || cfg["allowed_lateness"] != "2h0m0s" {
		t.Errorf("run_config = %v", cfg)
	}
	// SPEC §6's shared flags that play no part in a recomputation are taken, so that the stream's
	// command line works as it is, and change nothing reconcile does.
	shared, err := parse("--source=log", "--early=30s", "--idle-timeout=1m", "--dedup-retention=48h")
	if err != nil {
		t.Fatal(err)
	}
	if shared.Triggers.Early != 30*time.Second || shared.Watermark.IdleTimeout != time.Minute || shared.DedupRetention != 48*time.Hour {
		t.Errorf("shared flags: options = %+v", shared)
	}
	d, err := parse("--source=log")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(shared.RunConfig(), d.RunConfig()) {
		t.Errorf("run_config with --early, --idle-timeout, --dedup-retention: %v, want %v", shared.RunConfig(), d.RunConfig())
	}
	if cfg := d.RunConfig(); cfg["window"] != "1h0m0s" || cfg["dimensions"] != "" || cfg["allowed_lateness"] != "24h0m0s" || d.Sink.String() != "sqlite:revenue.db" {
		t.Errorf("defaults: run_config %v, sink %s", cfg, d.Sink)
	}
}

func TestFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--source is required"},
		{[]string{"--source=l", "--sink=jsonl:out"}, "sqlite:PATH and bigquery:PROJECT.DATASET sinks only"},
		{[]string{"--source=l", "--sink=mysql:x"}, "--sink"},
		{[]string{"--source=l", "--tolerance=-0.5"}, "--tolerance: must not be negative"},
		{[]string{"--source=l", "--tolerance=1e-7"}, "--tolerance"},
		{[]string{"--source=l", "--tolerance=abc"}, "--tolerance"},
		{[]string{"--source=l", "--report=out.txt"}, "--report"},
		{[]string{"--source=l", "--window=7m"}, "--window must divide 24h"},
		{[]string{"--source=l", "--dimensions=a,,b"}, "--dimensions"},
		{[]string{"--source=l", "--max-future=0s"}, "--max-future"},
		{[]string{"--source=l", "--log-level=loud"}, "--log-level"},
		{[]string{"--source=l", "--run-id=a/b"}, "--run-id"},
		{[]string{"--source=l", "--shards=0"}, "--shards"},
		{[]string{"--source=l", "--from=yesterday"}, "--from"},
		{[]string{"--source=l", "--max-line=2GiB"}, "too large"},
		{[]string{"--source=l", "--max-line=0"}, "--max-line"},
		{[]string{"--source=l", "--early=-1s"}, "--early must not be negative"},
		{[]string{"--source=l", "--idle-timeout=0s"}, "--idle-timeout must be positive"},
		{[]string{"--source=l", "--dedup-retention=1h"}, "--dedup-retention 1h0m0s is shorter than window + allowed lateness"},
		{[]string{"--source=l", "--idle-advance=hold"}, "unknown flag --idle-advance"},
		{[]string{"--source=l", "extra"}, `unexpected argument "extra"`},
	} {
		_, err := parse(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestRunnerAsSpelled: Beam's registry takes a --runner only as registered, and beam.Run ends
// the process for any other name after the work began: refused first, as launch does.
func TestRunnerAsSpelled(t *testing.T) {
	runner := *runners.Runner
	t.Cleanup(func() { *runners.Runner = runner })
	for _, name := range []string{"flnk", "Flink", "DATAFLOW"} {
		_, err := parse("--source=l", "--runner="+name)
		if want := "--runner=" + name + ": not a runner Beam registers under that name"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--runner=%s: err = %v, want %q", name, err, want)
		}
	}
	if _, err := parse("--source=l", "--runner=flink"); err != nil && strings.Contains(err.Error(), "not a runner Beam registers") {
		t.Errorf("--runner=flink refused: %v", err)
	}
}

// TestAsyncNeedsAJobServer: with prism in this process (no --endpoint), --async would return
// before the recomputation ran (it panicked in prism): one line and exit 2, before any work.
func TestAsyncNeedsAJobServer(t *testing.T) {
	async, endpoint := *jobopts.Async, *jobopts.Endpoint
	t.Cleanup(func() { *jobopts.Async, *jobopts.Endpoint = async, endpoint })
	*jobopts.Endpoint = "" // an earlier test's job may have set it
	dir := writeLog(t, map[string][]string{"p0": {purchase("A", "2026-11-04T10:15:00Z", "u1", "1")}})
	_, path := openSink(t)
	var stdout, stderr bytes.Buffer
	code := reconcile.Main([]string{"--source=" + dir, "--sink=sqlite:" + path, "--async"}, &stdout, &stderr)
	want := "reconcile: --async: prism runs in this process (no --endpoint), so the job would end with reconcile before it did any work: drop --async, or submit to a job server with --endpoint=HOST:PORT\n"
	if code != reconcile.ExitError || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("reconcile --async: exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr.String(), stdout.String(), reconcile.ExitError, want)
	}
}
