package localrunner

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
)

// countEachFn counts every element it sees under a counter of its own name.
type countEachFn struct{ Name string }

func (f *countEachFn) ProcessElement(ctx context.Context, _ int) {
	beam.NewCounter("prismonly", f.Name).Inc(ctx, 1)
}

func init() { register.DoFn2x0[context.Context, int](&countEachFn{}) }

// TestPrismWorkaroundsOnlyOnPrism: UseSafeOptions switches the metric gate
// and the split experiment on for prism only, and a job submitted after it
// on another runner carries neither. The job is submitted through a job
// server as the universal runner does (LOOPBACK, so its workers are this
// process and the gate's own state shows whether its hooks ran): after
// --runner=universal or flink no worker has gate state, after prism (the
// negative control, same job, same job server) the workers do. Prism's job
// server stands in for Flink's here: what is checked is what the launcher
// submits, which does not depend on who receives it.
func TestPrismWorkaroundsOnlyOnPrism(t *testing.T) {
	// A job server of its own (runnertest imports this package).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if _, err := prism.CreateJobServer(context.Background(), prism.Options{Port: port}); err != nil {
		t.Fatal(err)
	}
	endpoint := "localhost:" + strconv.Itoa(port)
	defer func(exps string) { *jobopts.Experiments = exps; hooks.DisableHook(metricGateHook) }(*jobopts.Experiments)
	*jobopts.Experiments = "user_experiment"
	for _, tc := range []struct {
		runner string
		prism  bool
	}{{"prism", true}, {"universal", false}, {"flink", false}, {"PrismRunner", true}, {"dataflow", false}} {
		UseSafeOptions(tc.runner)
		exps := jobopts.GetExperiments()
		if got := slices.Contains(exps, DisableSplitExperiment); got != tc.prism {
			t.Errorf("--runner=%s: experiments %v: %s present %v, want %v", tc.runner, exps, DisableSplitExperiment, got, tc.prism)
		}
		if !slices.Contains(exps, "user_experiment") {
			t.Errorf("--runner=%s: experiments %v lost the user's", tc.runner, exps)
		}
		if on, _ := hooks.IsEnabled(metricGateHook); on != tc.prism {
			t.Errorf("--runner=%s: metric gate hook enabled %v, want %v", tc.runner, on, tc.prism)
		}
		if tc.runner == "PrismRunner" || tc.runner == "dataflow" {
			continue // the same switch as prism and flink; one job each is enough
		}
		gate.mu.Lock()
		clear(gate.workers)
		gate.mu.Unlock()
		p, s := beam.NewPipelineWithRoot()
		beam.ParDo0(s, &countEachFn{Name: "n"}, beam.CreateList(s, []int{1, 2, 3, 4, 5, 6, 7, 8}))
		// Submitted as the universal runner does for --endpoint.
		*jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, "LOOPBACK"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		pr, err := universal.Execute(ctx, p)
		cancel()
		*jobopts.Endpoint, *jobopts.EnvironmentType = "", ""
		if err != nil {
			t.Fatalf("--runner=%s: %v", tc.runner, err)
		}
		RemovePlaceholder(context.Background(), endpoint, pr.JobID())
		m := pr.Metrics()
		var n int64
		for _, c := range m.AllMetrics().Counters() {
			if c.Namespace() == "prismonly" && c.Name() == "n" {
				n += c.Result()
			}
		}
		if n != 8 {
			t.Errorf("--runner=%s: counted %d, want 8", tc.runner, n)
		}
		gate.mu.Lock()
		workers := len(gate.workers)
		gate.mu.Unlock()
		if gated := workers > 0; gated != tc.prism {
			t.Errorf("--runner=%s: gate state in %d workers after the job, want the gate to have run %v", tc.runner, workers, tc.prism)
		}
	}
}
