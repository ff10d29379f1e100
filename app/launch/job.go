package launch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/metrics"
	"google.golang.org/grpc"
)

// jobFigures talks to a running job's job service for what beam.Run cannot offer while it blocks:
// its metrics, wherever the workers run, for the live views (figures), the sealer (reading) and the
// graceful stop, and a cancellation that keeps the job's final metrics. The job named name is
// looked for at each call until it is found (it may not be submitted yet).
type jobFigures struct {
	name string
	// endpoint is the job service's address ("": *jobopts.Endpoint).
	endpoint string

	mu     sync.Mutex
	conn   *grpc.ClientConn
	client jobpb.JobServiceClient
	id     string // the job's, once found
	// older are the ids of jobs of that name the job service ran before the submission (before):
	// an earlier launcher's job of the same --job_name, never this run's.
	older []string
}

// before notes the jobs of f's name the job service already runs, before the submission: with
// --job_name one may be an earlier launcher's, still running on Flink after that launcher ended.
func (f *jobFigures) before(ctx context.Context) {
	f.look(ctx, func(ctx context.Context, client jobpb.JobServiceClient) {
		jobs, _ := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, info := range jobs.GetJobInfo() {
			if info.GetJobName() == f.name {
				f.older = append(f.older, info.GetJobId())
			}
		}
	})
}

// state is job id's state as the job service reports it (UNSPECIFIED: no answer).
func (f *jobFigures) state(ctx context.Context, id string) (state jobpb.JobState_Enum) {
	f.look(ctx, func(ctx context.Context, client jobpb.JobServiceClient) {
		st, _ := client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		state = st.GetState()
	})
	return state
}

// look calls do with a new connection to the job service, within liveLook (not without one).
func (f *jobFigures) look(ctx context.Context, do func(context.Context, jobpb.JobServiceClient)) {
	endpoint := cmp.Or(f.endpoint, *jobopts.Endpoint)
	if endpoint == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, liveLook)
	defer cancel()
	conn, err := grpcx.Dial(ctx, endpoint, liveLook)
	if err != nil {
		return
	}
	defer conn.Close()
	do(ctx, jobpb.NewJobServiceClient(conn))
}

// find connects to the job service and finds the running job (false: not yet); f.mu is held.
func (f *jobFigures) find(ctx context.Context) bool {
	if f.conn != nil {
		return true
	}
	endpoint := cmp.Or(f.endpoint, *jobopts.Endpoint)
	if endpoint == "" {
		return false
	}
	conn, err := grpcx.Dial(ctx, endpoint, 5*time.Second)
	if err != nil {
		return false
	}
	client := jobpb.NewJobServiceClient(conn)
	jobs, _ := client.GetJobs(ctx, &jobpb.GetJobsRequest{}) // nil on an error: no job
	for _, info := range jobs.GetJobInfo() {
		if info.GetJobName() == f.name && !slices.Contains(ended, info.GetState()) && !slices.Contains(f.older, info.GetJobId()) {
			f.conn, f.client, f.id = conn, client, info.GetJobId()
			return true
		}
	}
	conn.Close()
	return false
}

// ended are the states of a job that is over.
var ended = []jobpb.JobState_Enum{jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
	jobpb.JobState_DRAINED, jobpb.JobState_UPDATED}

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

// metrics reads the job's metrics within timeout (0: ctx's; nil: no answer).
func (f *jobFigures) metrics(ctx context.Context, timeout time.Duration) *beammetrics.Results {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	f.mu.Lock()
	found, client, id := f.find(ctx), f.client, f.id
	f.mu.Unlock()
	if !found {
		return nil
	}
	resp, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		return nil
	}
	m := resp.GetMetrics()
	return metricsx.FromMonitoringInfos(nil, m.GetAttempted(), m.GetCommitted())
}

// found is the job's id once a look has found it ("": not yet).
func (f *jobFigures) found() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id
}

// cancel asks the job service to cancel the job found.
func (f *jobFigures) cancel(ctx context.Context) error {
	f.mu.Lock()
	client, id := f.client, f.id
	f.mu.Unlock()
	if _, err := client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}); err != nil {
		return fmt.Errorf("job %s: cancel: %w", id, err)
	}
	return nil
}

func (f *jobFigures) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.Close()
		f.conn, f.client, f.id = nil, nil, ""
	}
}

// reading is one read of a job's counters, with what it can prove.
type reading struct {
	metrics.Counts
	// committed: the runner's committed values, not attempted ones; reported: any counter at all.
	committed, reported bool
}

func readingOf(m beammetrics.Results) reading {
	c, committed, reported := metrics.Committed(m)
	return reading{Counts: c, committed: committed, reported: reported}
}

// proves reports whether committed counters saw records (a runner without live metrics shows
// zero), all judged.
func (r reading) proves() bool {
	return r.committed && r.Read > 0 && r.Conserved()
}
