package launch

import (
	"context"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/localrunner"
)

// TestRunLeavesNoLoopbackPlaceholder: a job on the embedded runner stages an
// empty beamloopbackworker-* file as its worker binary, which the SDK never
// removes (localrunner.RemovePlaceholder); Run removes its job's.
func TestRunLeavesNoLoopbackPlaceholder(t *testing.T) {
	sum, _ := run(t, options(t, writeLog(t, minimalLog...)))
	if sum.JobID == "" {
		t.Fatal("the summary names no job")
	}
	path, err := localrunner.Placeholder(context.Background(), *jobopts.Endpoint, sum.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if path == "" {
		t.Fatalf("job %s staged no placeholder: has the SDK stopped making one? (then the removal can go)", sum.JobID)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("job %s left its placeholder %s (lstat: %v)", sum.JobID, path, err)
	}
}
