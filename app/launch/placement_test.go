package launch

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

// runnerFlags saves the SDK's process-wide runner flags, which a command
// line in the test sets; the returned func puts them back.
func runnerFlags(t *testing.T) (reset func()) {
	runner, env, endpoint := *runners.Runner, *jobopts.EnvironmentType, *jobopts.Endpoint
	reset = func() { *runners.Runner, *jobopts.EnvironmentType, *jobopts.Endpoint = runner, env, endpoint }
	t.Cleanup(reset)
	return reset
}

// TestRefusesLocalPartsOffProcess: on a runner whose workers run in other
// processes, every local-only part is one line on stderr and exit 2 before
// any work, naming the part and what to use instead; --shared-filesystem
// lets the same command line through.
func TestRefusesLocalPartsOffProcess(t *testing.T) {
	dir := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	reset := runnerFlags(t)
	const shared = ", or pass --shared-filesystem if every worker sees this machine's paths"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runner=universal", "--sink=sqlite:x.db"},
			"launch: --sink=sqlite:x.db is local to this machine, but with --runner=universal the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--runner=dataflow", "--source=" + dir},
			"launch: --sink=sqlite:revenue.db is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--runner=universal", "--sink=jsonl:out"},
			"launch: --sink=jsonl:out is local to this machine, but with --runner=universal the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--environment_type=PROCESS", "--sink=sqlite:x.db"},
			"launch: --sink=sqlite:x.db is local to this machine, but with --environment_type=PROCESS the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET" + shared},
		{[]string{"--runner=dataflow", "--sink=bigquery:my-project.d", "--source=" + dir},
			"launch: --source=" + dir + " is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: read the raw log from a bucket with --source=gs://BUCKET/PATH" + shared},
		{[]string{"--runner=universal", "--sink=bigquery:my-project.d"},
			"launch: the demo's log (./demo-data) is local to this machine, but with --runner=universal the workers run in other processes or on other machines: replay it from a bucket with --source=gs://BUCKET/PATH" + shared},
		{[]string{"--runner=universal", "--sink=bigquery:my-project.d", "--source=pubsub:projects/p/subscriptions/revenue", "--pubsub-archive=archive"},
			"launch: --pubsub-archive=archive is local to this machine, but with --runner=universal the workers run in other processes or on other machines: archive to a bucket with --pubsub-archive=gs://BUCKET/PATH" + shared},
		{[]string{"--runner=dataflow", "--sink=bigquery:my-project.d", "--source=gs://bucket/raw", "--control=control"},
			"launch: --control=control is local to this machine, but with --runner=dataflow the workers run in other processes or on other machines: write the stop request to a bucket with --control=gs://BUCKET/PATH" + shared},
	} {
		reset()
		wantRefused(t, tc.args, tc.want)

		// The same command line with --shared-filesystem passes the check.
		reset()
		o, err := Parse(append(tc.args, "--shared-filesystem"))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.placement(); err != nil {
			t.Errorf("launch %s --shared-filesystem: %v", strings.Join(tc.args, " "), err)
		}
	}

	// prism in this process (the default, LOOPBACK) reaches every local part.
	reset()
	o, err := Parse([]string{"--source=" + dir, "--sink=sqlite:x.db"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.placement(); err != nil {
		t.Errorf("in-process prism: %v", err)
	}
}

// TestIdleAdvanceHoldOnlyOnPrism: --idle-advance=hold follows the active
// partitions a worker process sees (a prism workaround, see
// internal/localrunner), so off prism it is one line and exit 2 before any
// work; on prism, in this process or as a job server, it passes.
func TestIdleAdvanceHoldOnlyOnPrism(t *testing.T) {
	dir := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	reset := runnerFlags(t)
	for _, runner := range []string{"flink", "universal", "dataflow"} {
		reset()
		args := []string{"--runner=" + runner, "--idle-advance=hold", "--source=" + dir, "--shared-filesystem"}
		wantRefused(t, args, "launch: --idle-advance=hold needs --runner=prism: an idle partition follows the active ones it sees in its own worker process, and on "+
			runner+" a worker holding only idle partitions would hold the whole pipeline; use --idle-advance=processing-time")
	}
	for _, runner := range []string{"prism", "PrismRunner"} {
		reset()
		o, err := Parse([]string{"--runner=" + runner, "--idle-advance=hold", "--source=" + dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("--runner=%s --idle-advance=hold: %v", runner, err)
		}
	}
}

// TestRefusesConsoleSinkOffProcess: the console sink prints on the stdout of the process that runs
// its write step and keeps its revision guard in that process's memory: with workers in other
// processes the rows go to the workers' logs, not to the launcher's terminal, and each worker's
// guard admits revisions another worker already showed. Off the in-process runner it is one line,
// exit 2, before any work, --shared-filesystem or not (it shares paths, not stdout).
func TestRefusesConsoleSinkOffProcess(t *testing.T) {
	reset := runnerFlags(t)
	const want = "launch: --sink=console prints on the stdout of the process running the write step, but with %s the workers run in other processes or on other machines: use --sink=bigquery:PROJECT.DATASET (or --sink=sqlite:PATH with --shared-filesystem)"
	for _, tc := range []struct {
		args  []string
		where string
	}{
		{[]string{"--runner=universal", "--sink=console", "--source=gs://bucket/raw"}, "--runner=universal"},
		{[]string{"--runner=flink", "--sink=console", "--source=gs://bucket/raw", "--shared-filesystem"}, "--runner=flink"},
		{[]string{"--environment_type=PROCESS", "--sink=console", "--source=gs://bucket/raw", "--shared-filesystem"}, "--environment_type=PROCESS"},
	} {
		reset()
		o, err := Parse(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.placement(); err == nil {
			t.Errorf("launch %s: console sink accepted with workers in other processes", strings.Join(tc.args, " "))
		} else if got, w := "launch: "+err.Error(), strings.Replace(want, "%s", tc.where, 1); got != w {
			t.Errorf("launch %s:\n got %q\nwant %q", strings.Join(tc.args, " "), got, w)
		}
	}
	// In this process (prism, LOOPBACK) the console is the launcher's own stdout.
	reset()
	o, err := Parse([]string{"--sink=console", "--source=gs://bucket/raw"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.placement(); err != nil {
		t.Errorf("in-process prism: %v", err)
	}
}
