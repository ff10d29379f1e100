package pipeline_test

import (
	"testing"

	"github.com/revenue-stream/hourly/pipeline"
)

// The EARLY refresh takes processing-time timers only where the runner's
// capability profile says it fires them; Flink, an unknown job server
// (--runner=universal, how Flink users submit) and every runner the table
// does not know take the periodic impulse.
func TestEarlySourceFollowsTheCapabilityTable(t *testing.T) {
	for runner, want := range map[string]string{
		"prism": pipeline.EarlyTimer, "": pipeline.EarlyTimer, "dataflow": pipeline.EarlyTimer,
		"flink": pipeline.EarlyImpulse, "FlinkRunner": pipeline.EarlyImpulse,
		"universal": pipeline.EarlyImpulse, "portable": pipeline.EarlyImpulse,
		"spark": pipeline.EarlyImpulse, "samza": pipeline.EarlyImpulse,
	} {
		if got := pipeline.EarlySourceFor(runner); got != want {
			t.Errorf("EarlySourceFor(%q) = %s, want %s", runner, got, want)
		}
	}
}
