package localrunner

import (
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/capability"
)

// DisableSplitExperiment turns off prism's runner-initiated bundle splits.
//
// Prism v2.77.0 splits any bundle that makes no visible progress for a while,
// stateful ones included; a split of a bundle holding timers is "unexpected"
// (apache/beam#35771) and was measured here to replay elements the SDK had
// already processed: the conservation identity broke by 5,465 records in a
// 1,000,000-event run. The source self-checkpoints (ResumeProcessingIn), so
// it needs no runner-initiated split. Only on prism (UseSafeOptions):
// elsewhere nothing replaces it, the runner decides its splits (the
// replay is prism's handling of them, apache/beam#35771).
const DisableSplitExperiment = "prism_disable_sdf_split"

// UseSafeOptions sets the next submitted job's prism workarounds for
// runner, and only on prism (IsPrism): DisableSplitExperiment in Beam's
// --experiments flag (keeping what the user set) and the metric gate
// (metricgate.go) in the job's workers. On any other runner both are
// switched off, so that a process that ran a prism job before (a test
// binary) submits none of them: the gate's hooks travel with the job's
// options into every worker, where a runner that never asks for metric
// metadata would make its alias map grow with every bundle. Call it
// before beam.Run (or ptest.Run).
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
	if slices.Contains(exps, DisableSplitExperiment) {
		return
	}
	*jobopts.Experiments = strings.Join(append(exps, DisableSplitExperiment), ",")
}
