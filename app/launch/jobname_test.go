package launch

import (
	"context"
	"net"
	"sync"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
)

// jobList is a job service that lists jobs only.
type jobList struct {
	jobpb.UnimplementedJobServiceServer
	mu   sync.Mutex
	jobs []*jobpb.JobInfo
}

func (s *jobList) GetJobs(context.Context, *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &jobpb.GetJobsResponse{JobInfo: s.jobs}, nil
}

func (s *jobList) add(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = append(s.jobs, &jobpb.JobInfo{JobId: id, JobName: name, State: jobpb.JobState_RUNNING})
}

// TestJobFiguresSkipsAnOlderJobOfTheSameName: with --job_name, a job of that name may already run
// on the job server (an earlier launcher's, left running on Flink when that launcher died). The
// stop, the live views and the sealer must find this run's job, not the older one: cancelling that
// one left this run's job running after the launcher exited.
func TestJobFiguresSkipsAnOlderJobOfTheSameName(t *testing.T) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, jobs := grpc.NewServer(), &jobList{}
	jobpb.RegisterJobServiceServer(srv, jobs)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)

	jobs.add("old", "revenue")
	ctx := context.Background()
	jf := &jobFigures{name: "revenue", endpoint: l.Addr().String()}
	defer jf.close()
	jf.before(ctx) // before the submission
	jobs.add("ours", "revenue")
	jf.mu.Lock()
	found := jf.find(ctx)
	jf.mu.Unlock()
	if !found || jf.found() != "ours" {
		t.Errorf("found %v, job %q; want this run's job %q, not the older job of the same name", found, jf.found(), "ours")
	}
}
