package localrunner

import (
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// DisableSplitExperiment turns off prism's runner-initiated bundle splits.
//
// Prism v2.77.0 splits any bundle that makes no visible progress for a while,
// stateful ones included; a split of a bundle holding timers is "unexpected"
// (apache/beam#35771) and was measured here to replay elements the SDK had
// already processed: the conservation identity broke by 5,465 records in a
// 1,000,000-event run. The source self-checkpoints (ResumeProcessingIn), so
// it needs no runner-initiated split.
const DisableSplitExperiment = "prism_disable_sdf_split"

// UseSafeOptions adds DisableSplitExperiment to Beam's --experiments flag,
// keeping what the user set, and enables the metric gate (metricgate.go) in
// the job's workers. Call it before beam.Run (or ptest.Run). Both are
// harmless on other runners.
func UseSafeOptions() {
	if err := enableMetricGate(); err != nil {
		panic(err) // registered in init: cannot fail
	}
	exps := jobopts.GetExperiments()
	if slices.Contains(exps, DisableSplitExperiment) {
		return
	}
	v := strings.Join(append(exps, DisableSplitExperiment), ",")
	*jobopts.Experiments = v
}
