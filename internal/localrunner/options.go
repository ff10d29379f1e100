package localrunner

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/revenue-stream/hourly/internal/capability"
)

// DisableSplitExperiment turns off prism's runner-initiated bundle splits, which
// replay processed elements of bundles with timers (apache/beam#35771). The
// source self-checkpoints (ResumeProcessingIn), so it needs none.
const DisableSplitExperiment = "prism_disable_sdf_split"

// UseSafeOptions sets the next job's prism workarounds, on prism only:
// DisableSplitExperiment in --experiments, the metric gate and, when prism
// runs in this process (no --endpoint), more Go processors (procs.go). On any other
// runner both are switched off, so a process that ran a prism job before (a
// test binary) submits neither. Call it before beam.Run (or ptest.Run).
func UseSafeOptions(runner string) {
	exps := jobopts.GetExperiments()
	if !capability.IsPrism(runner) {
		hooks.DisableHook(metricGateHook)
		if i := slices.Index(exps, DisableSplitExperiment); i >= 0 {
			*jobopts.Experiments = strings.Join(slices.Delete(exps, i, i+1), ",")
		}
		return
	}
	if err := enableMetricGate(); err != nil {
		panic(err) // registered in init: cannot fail
	}
	if *jobopts.Endpoint == "" { // beam.Run starts prism in this process
		inProcess()
	}
	if !slices.Contains(exps, DisableSplitExperiment) {
		*jobopts.Experiments = strings.Join(append(exps, DisableSplitExperiment), ",")
	}
}

// EnsureJobService starts prism's job service before the job and sets
// --endpoint (and --environment_type=loopback unless set), so the launcher
// knows the address without racing beam.Run. It does nothing when --endpoint
// is set or the runner is not prism. It raises GOMAXPROCS (procs.go).
func EnsureJobService(ctx context.Context, runner string) error {
	if *jobopts.Endpoint != "" || !capability.IsPrism(runner) {
		return nil
	}
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return fmt.Errorf("prism: pick a port for the job service: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if _, err := prism.CreateJobServer(ctx, prism.Options{Port: port}); err != nil {
		return fmt.Errorf("prism: start the job service: %w", err)
	}
	*jobopts.Endpoint = fmt.Sprintf("localhost:%d", port)
	inProcess() // prism runs in this process now
	if *jobopts.EnvironmentType == "" {
		*jobopts.EnvironmentType = "loopback" // as prism's runner defaults it
	}
	return nil
}

// CheckAsync refuses --async (Dataflow's --execute_async sets the same flag) when prism would run
// in this process (no --endpoint): beam.Run returns at once, the command returns and the job dies
// with the process, having written nothing (or panics in prism on the way out). With a job server
// at --endpoint, or another runner, the job outlives the command and --async keeps its meaning.
func CheckAsync(command, runner string) error {
	if !*jobopts.Async || !capability.IsPrism(runner) || *jobopts.Endpoint != "" {
		return nil
	}
	return fmt.Errorf("--async: prism runs in this process (no --endpoint), so the job would end with %s before it did any work: drop --async, or submit to a job server with --endpoint=HOST:PORT", command)
}
