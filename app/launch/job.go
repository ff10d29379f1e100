package launch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"github.com/revenue-stream/hourly/app/live"
	"google.golang.org/grpc"
)

// job talks to a running job's job service for what beam.Run cannot offer while it blocks: live
// counters and a cancellation that keeps the job's final metrics.
type job struct {
	conn   *grpc.ClientConn
	client jobpb.JobServiceClient
	id     string
}

// findJob connects to endpoint and finds the running job named name.
func findJob(ctx context.Context, endpoint, name string) (*job, error) {
	if endpoint == "" {
		return nil, fmt.Errorf("no job service endpoint")
	}
	conn, err := grpcx.Dial(ctx, endpoint, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to job service %s: %w", endpoint, err)
	}
	client := jobpb.NewJobServiceClient(conn)
	jobs, err := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("list jobs at %s: %w", endpoint, err)
	}
	for _, info := range jobs.GetJobInfo() {
		if info.GetJobName() == name && !terminal(info.GetState()) {
			return &job{conn: conn, client: client, id: info.GetJobId()}, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("job %q is not running at %s", name, endpoint)
}

func terminal(s jobpb.JobState_Enum) bool {
	switch s {
	case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
		jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
		return true
	}
	return false
}

// metrics returns the job's counters so far.
func (j *job) metrics(ctx context.Context) (*metrics.Results, error) {
	resp, err := j.client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: j.id})
	if err != nil {
		return nil, fmt.Errorf("job %s: metrics: %w", j.id, err)
	}
	m := resp.GetMetrics()
	return metricsx.FromMonitoringInfos(nil, m.GetAttempted(), m.GetCommitted()), nil
}

// cancel asks the job service to cancel the job.
func (j *job) cancel(ctx context.Context) error {
	if _, err := j.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: j.id}); err != nil {
		return fmt.Errorf("job %s: cancel: %w", j.id, err)
	}
	return nil
}

func (j *job) close() { j.conn.Close() }

// jobFigures reads the running job's metrics from its job service, wherever the workers run: for
// the live views (figures), the sealer (reading) and the graceful stop (which cancels it too).
type jobFigures struct {
	name string

	mu sync.Mutex
	j  *job
}

// liveLook bounds one look of the live views and the sealer at the job's metrics.
const liveLook = 2 * time.Second

// figures is a live.FiguresFunc.
func (f *jobFigures) figures(ctx context.Context) (live.Figures, bool) {
	m := f.metrics(ctx, liveLook)
	if m == nil {
		return live.Figures{}, false
	}
	return live.FiguresOf(m), true
}

// reading reads the job's counters (ok false: the job service did not answer).
func (f *jobFigures) reading(ctx context.Context) (reading, bool) {
	m := f.metrics(ctx, liveLook)
	if m == nil {
		return reading{}, false
	}
	return readingOf(*m), true
}

// metrics reads the job's metrics within timeout (0: ctx's; nil: no answer), finding the job once;
// until it is submitted, it is looked for again at each call.
func (f *jobFigures) metrics(ctx context.Context, timeout time.Duration) *metrics.Results {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	f.mu.Lock()
	if f.j == nil {
		f.j, _ = findJob(ctx, *jobopts.Endpoint, f.name)
	}
	j := f.j
	f.mu.Unlock()
	if j == nil {
		return nil
	}
	m, _ := j.metrics(ctx)
	return m
}

// found is the job once a look has found it (nil: not yet).
func (f *jobFigures) found() *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.j
}

func (f *jobFigures) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.j != nil {
		f.j.close()
		f.j = nil
	}
}
