package localrunner

import (
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
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
