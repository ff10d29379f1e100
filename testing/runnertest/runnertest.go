// Package runnertest runs pipelines the way a portable job server (Flink's,
// Spark's) receives them, without leaving the test process: an in-process
// prism job server on a loopback port, and jobs submitted to it with
// --runner=universal --endpoint=localhost:PORT --environment_type=LOOPBACK.
// The SDK harness then runs in the test process too, so testing/collect
// works, and a job can be cancelled through the job service, which (unlike
// cancelling the context given to beam.Run) really stops it and lets Run
// return.
//
// Jobs are submitted one at a time: the universal runner reads its settings
// from process-wide flags.
package runnertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/internal/localrunner"
)

// JobServer is a prism job server running in this process.
type JobServer struct {
	// Endpoint is "localhost:PORT", what --endpoint takes.
	Endpoint string
	Client   jobpb.JobServiceClient
}

var (
	serverOnce sync.Once
	server     *JobServer
	serverErr  error
)

// StartJobServer starts the process's job server, or returns the one already
// started: prism's job server cannot be stopped, so one serves every test.
//
// prism binds it to every interface (":PORT"), not only loopback; the tests
// talk to it through localhost only.
func StartJobServer() (*JobServer, error) {
	serverOnce.Do(func() {
		port, err := freePort()
		if err != nil {
			serverErr = fmt.Errorf("runnertest: find a free port: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client, err := prism.CreateJobServer(ctx, prism.Options{Port: port})
		if err != nil {
			serverErr = fmt.Errorf("runnertest: start prism job server on port %d: %w", port, err)
			return
		}
		server = &JobServer{Endpoint: "localhost:" + strconv.Itoa(port), Client: client}
	})
	return server, serverErr
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before prism binds it; on a test machine that is rare enough.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Run runs p as ptest.RunWithMetrics does (ptest's --runner, prism by
// default) and removes the job's loopback placeholder, which the SDK leaves
// (localrunner.RemovePlaceholder).
func Run(p *beam.Pipeline) (beam.PipelineResult, error) {
	pr, err := ptest.RunWithMetrics(p)
	if pr != nil {
		localrunner.RemoveJobPlaceholder(context.Background(), pr.JobID())
	}
	return pr, err
}

// Job is a submitted pipeline.
type Job struct {
	ID, Name string
	js       *JobServer

	done chan struct{}
	res  beam.PipelineResult
	err  error
}

var (
	submitMu sync.Mutex
	seq      atomic.Int64
)

// Submit submits p to the job server as the universal runner does for a
// portable job server, in LOOPBACK mode, and returns once the job server has
// the job. beam.Init must have run (ptest.Main does it).
func Submit(js *JobServer, p *beam.Pipeline) (*Job, error) {
	submitMu.Lock()
	defer submitMu.Unlock()
	name := fmt.Sprintf("runnertest-%d-%d", seq.Add(1), time.Now().UnixNano())
	j := &Job{Name: name, js: js, done: make(chan struct{})}

	// The flags a launcher would be given: --runner=universal
	// --endpoint=localhost:PORT --environment_type=LOOPBACK --job_name=...
	*jobopts.Endpoint = js.Endpoint
	*jobopts.EnvironmentType = "LOOPBACK"
	*jobopts.JobName = name
	go func() {
		defer close(j.done)
		j.res, j.err = universal.Execute(context.Background(), p)
		// The SDK leaves an empty file per loopback job.
		if id, err := js.find(name); err == nil {
			localrunner.RemovePlaceholder(context.Background(), js.Endpoint, id)
		}
	}()

	// Hold the flags until the job server has the job: Execute reads them
	// while it prepares and submits.
	deadline := time.Now().Add(60 * time.Second)
	for {
		id, err := js.find(name)
		if err != nil {
			return nil, err
		}
		if id != "" {
			j.ID = id
			return j, nil
		}
		select {
		case <-j.done:
			if j.err == nil {
				j.err = errors.New("job ended before the job server listed it")
			}
			return nil, fmt.Errorf("runnertest: submit %s: %w", name, j.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("runnertest: submit %s: job server did not list the job within a minute", name)
		}
	}
}

func (js *JobServer) find(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := js.Client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		return "", fmt.Errorf("runnertest: list jobs: %w", err)
	}
	for _, info := range resp.GetJobInfo() {
		if info.GetJobName() == name {
			return info.GetJobId(), nil
		}
	}
	return "", nil
}

// Wait waits for the job to end (or ctx) and returns what beam.Run returned.
// A cancelled job returns a nil error: check State.
func (j *Job) Wait(ctx context.Context) (beam.PipelineResult, error) {
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return nil, fmt.Errorf("runnertest: job %s still running: %w", j.Name, ctx.Err())
	}
}

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel cancels the job through the job service and waits until it has
// ended.
func (j *Job) Cancel(ctx context.Context) error {
	if _, err := j.js.Client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: j.ID}); err != nil {
		return fmt.Errorf("runnertest: cancel %s: %w", j.Name, err)
	}
	_, err := j.Wait(ctx)
	return err
}

// State is the job's state in the job server.
func (j *Job) State(ctx context.Context) (jobpb.JobState_Enum, error) {
	st, err := j.js.Client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: j.ID})
	if err != nil {
		return jobpb.JobState_UNSPECIFIED, fmt.Errorf("runnertest: state of %s: %w", j.Name, err)
	}
	return st.GetState(), nil
}

// Metrics returns the job's counters so far (while it runs, too).
func (j *Job) Metrics(ctx context.Context) (*metrics.Results, error) {
	resp, err := j.js.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: j.ID})
	if err != nil {
		return nil, fmt.Errorf("runnertest: metrics of %s: %w", j.Name, err)
	}
	m := resp.GetMetrics()
	return metricsx.FromMonitoringInfos(nil, m.GetAttempted(), m.GetCommitted()), nil
}

// Counter sums a user counter over all steps (committed where the runner
// reports it, else attempted).
func Counter(m *metrics.Results, namespace, name string) int64 {
	var sum int64
	for _, c := range m.AllMetrics().Counters() {
		if c.Namespace() == namespace && c.Name() == name {
			sum += c.Result()
		}
	}
	return sum
}

// WaitFor polls cond every 50 ms until it holds, the job ends, or timeout.
// It returns an error saying which.
func (j *Job) WaitFor(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-j.done:
			if cond() {
				return nil
			}
			return fmt.Errorf("runnertest: job %s ended (err %v) before %s", j.Name, j.err, what)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runnertest: no %s within %v", what, timeout)
		}
	}
	return nil
}
