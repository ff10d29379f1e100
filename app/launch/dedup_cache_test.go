package launch

import (
	"flag"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// workerFlags saves the SDK's worker-count flags (Dataflow's --num_workers,
// Flink's --parallelism) with the runner's, which a command line sets.
func workerFlags(t *testing.T) (reset func()) {
	runner := runnerFlags(t)
	parallelism, numWorkers := *jobopts.Parallelism, flag.Lookup("num_workers").Value.String()
	reset = func() {
		runner()
		*jobopts.Parallelism = parallelism
		_ = flag.Lookup("num_workers").Value.Set(numWorkers)
	}
	t.Cleanup(reset)
	return reset
}

// TestDedupCacheSizedPerWorker: off prism --dedup-cache defaults to what
// the shards a worker owns hold, from the worker count the submission
// states (docs/capacity.md: 24 GiB on 4 workers at 20,000 ev/s); an
// explicit --dedup-cache wins, and prism keeps its 1 GiB.
func TestDedupCacheSizedPerWorker(t *testing.T) {
	const gib = 1 << 30
	reset := workerFlags(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--runner=dataflow", "--num_workers=4"}, 24 * gib},
		{[]string{"--runner=flink", "--parallelism=4"}, 24 * gib},
		{[]string{"--runner=flink", "--parallelism=4", "--workers=8"}, 12 * gib},
		{[]string{"--runner=dataflow", "--design-rate=100000", "--num_workers=20"}, 24 * gib},
		// No worker count: one worker may own every shard (the memory
		// limit caps it on the worker).
		{[]string{"--runner=flink"}, 93 * gib},
		{[]string{"--runner=flink", "--parallelism=4", "--dedup-cache=2GiB"}, 2 * gib},
		// Prism: 0, the transforms default (1 GiB), as before.
		{[]string{"--runner=prism"}, 0},
	} {
		reset()
		o, err := Parse(tc.args)
		if err != nil {
			t.Fatalf("Parse(%v): %v", tc.args, err)
		}
		if got := o.Pipeline.DedupCacheBytes; got != tc.want {
			t.Errorf("launch %s: --dedup-cache %.2f GiB, want %.2f GiB", strings.Join(tc.args, " "), float64(got)/gib, float64(tc.want)/gib)
		}
	}
}

// TestDedupCacheBadFlags: one line on stderr, exit 2, nothing run.
func TestDedupCacheBadFlags(t *testing.T) {
	reset := workerFlags(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dedup-cache=lots"}, `launch: --dedup-cache: invalid size "lots": want a positive size like 512MiB or 23GiB`},
		{[]string{"--dedup-cache=0"}, `launch: --dedup-cache: invalid size "0": want a positive size like 512MiB or 23GiB`},
		{[]string{"--dedup-cache=2XB"}, `launch: --dedup-cache: invalid size "2XB": want a positive size like 512MiB or 23GiB`},
		{[]string{"--workers=0"}, `launch: --workers: invalid count "0": want a positive integer`},
		{[]string{"--workers=4"}, `launch: --workers sizes the dedup cache of a distributed runner's workers: prism runs every shard in this process (its cache is --dedup-cache, default 1GiB)`},
	} {
		reset()
		wantRefused(t, tc.args, tc.want)
	}
	// Above cli.ParseSize's 1 GiB cap (--max-line's): accepted.
	if n, err := parseCacheSize("23GiB"); err != nil || n != 23<<30 {
		t.Fatalf("parseCacheSize(23GiB) = %d, %v", n, err)
	}
}

// TestSummaryShowsDedupReloads: the summary shows the reloads the capacity
// plan keeps near zero, when the dedup step reported them.
func TestSummaryShowsDedupReloads(t *testing.T) {
	const want = "dedup cache: 16 shard reloads from the runner's state, 0 evictions (near zero past each shard's first load when --dedup-cache holds the shards a worker owns)\n"
	for _, counters := range []map[string]int64{{"dedup_state_reloads": 16}, nil} {
		c := metrics.Counts{Read: 2000, Counted: 2000, DedupElements: 61, Counters: counters}
		s := &Summary{Counts: c, Conserved: true, Identity: c.Identity()}
		var b strings.Builder
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "dedup cache:"); got != (counters != nil) {
			t.Errorf("counters %v: summary shows a dedup cache line: %v:\n%s", counters, got, b.String())
		}
		if counters != nil && !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
