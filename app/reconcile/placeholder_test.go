package reconcile_test

import (
	"context"
	"os"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"github.com/revenue-stream/hourly/internal/localrunner"
)

// TestReconcileLeavesNoLoopbackPlaceholder: the SDK stages an empty
// beamloopbackworker-* file as each loopback job's worker binary and never
// removes it (localrunner.RemovePlaceholder). Every job this test process
// ran on prism, the reconcile's among them, has had its file removed.
func TestReconcileLeavesNoLoopbackPlaceholder(t *testing.T) {
	dir, path, _ := openScenario(t)
	run(t, options(dir, path, "placeholder"))

	ctx := context.Background()
	conn, err := grpcx.Dial(ctx, *jobopts.Endpoint, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	jobs, err := jobpb.NewJobServiceClient(conn).GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	staged := 0
	for _, job := range jobs.GetJobInfo() {
		p, err := localrunner.Placeholder(ctx, *jobopts.Endpoint, job.GetJobId())
		if err != nil {
			t.Fatal(err)
		}
		if p == "" {
			continue
		}
		staged++
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("job %s (%s) left its placeholder %s (lstat: %v)", job.GetJobId(), job.GetJobName(), p, err)
		}
	}
	if staged == 0 {
		t.Fatalf("none of the %d jobs staged a placeholder: has the SDK stopped making one? (then the removal can go)", len(jobs.GetJobInfo()))
	}
}
