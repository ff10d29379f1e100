package runnertest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NoLiveMetrics is a job service in front of another (a prism job server)
// that behaves as Beam Java's job server does for Flink: while a job runs,
// GetJobMetrics answers with no metrics at all (JobInvocation.getMetrics
// has none before the job ends); once the job is in a terminal state it
// answers with the job's own. Every other call is passed through, so a job
// submitted to Endpoint runs as it would on the job server behind it.
// Artifacts are staged with the job server behind it directly (its Prepare
// answer names itself), and the workers talk to it directly too.
type NoLiveMetrics struct {
	// Endpoint is "localhost:PORT", what --endpoint takes.
	Endpoint string
	// Hidden counts the GetJobMetrics calls answered with no metrics.
	Hidden atomic.Int64
	// Shown counts those answered with the job's metrics (after its end).
	Shown atomic.Int64
	// PassThrough, when set, answers every GetJobMetrics with the job's
	// metrics, live ones included: the proxy then hides nothing (a test's
	// negative control).
	PassThrough atomic.Bool
	// FailCancel, when set, fails every Cancel (the job runs on).
	FailCancel atomic.Bool

	srv  *grpc.Server
	conn *grpc.ClientConn
}

// StartNoLiveMetrics serves a NoLiveMetrics proxy on a free loopback port
// in front of the job service at upstream; Close stops it.
func StartNoLiveMetrics(upstream string) (*NoLiveMetrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpcx.Dial(ctx, upstream, 10*time.Second)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &NoLiveMetrics{Endpoint: l.Addr().String(), srv: grpc.NewServer(), conn: conn}
	jobpb.RegisterJobServiceServer(p.srv, &noLiveMetricsServer{p: p, up: jobpb.NewJobServiceClient(conn)})
	go p.srv.Serve(l)
	return p, nil
}

// Close stops the proxy.
func (p *NoLiveMetrics) Close() {
	p.srv.Stop()
	p.conn.Close()
}

type noLiveMetricsServer struct {
	jobpb.UnimplementedJobServiceServer
	p  *NoLiveMetrics
	up jobpb.JobServiceClient
}

func (s *noLiveMetricsServer) GetJobMetrics(ctx context.Context, req *jobpb.GetJobMetricsRequest) (*jobpb.GetJobMetricsResponse, error) {
	if !s.p.PassThrough.Load() {
		st, err := s.up.GetState(ctx, &jobpb.GetJobStateRequest{JobId: req.GetJobId()})
		if err != nil {
			return nil, err
		}
		if !terminal(st.GetState()) {
			s.p.Hidden.Add(1)
			return &jobpb.GetJobMetricsResponse{Metrics: &jobpb.MetricResults{}}, nil
		}
	}
	s.p.Shown.Add(1)
	return s.up.GetJobMetrics(ctx, req)
}

func terminal(s jobpb.JobState_Enum) bool {
	switch s {
	case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
		jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
		return true
	}
	return false
}

func (s *noLiveMetricsServer) Prepare(ctx context.Context, req *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	return s.up.Prepare(ctx, req)
}

func (s *noLiveMetricsServer) Run(ctx context.Context, req *jobpb.RunJobRequest) (*jobpb.RunJobResponse, error) {
	return s.up.Run(ctx, req)
}

func (s *noLiveMetricsServer) GetJobs(ctx context.Context, req *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	return s.up.GetJobs(ctx, req)
}

func (s *noLiveMetricsServer) GetState(ctx context.Context, req *jobpb.GetJobStateRequest) (*jobpb.JobStateEvent, error) {
	return s.up.GetState(ctx, req)
}

func (s *noLiveMetricsServer) GetPipeline(ctx context.Context, req *jobpb.GetJobPipelineRequest) (*jobpb.GetJobPipelineResponse, error) {
	return s.up.GetPipeline(ctx, req)
}

func (s *noLiveMetricsServer) Cancel(ctx context.Context, req *jobpb.CancelJobRequest) (*jobpb.CancelJobResponse, error) {
	if s.p.FailCancel.Load() {
		return nil, status.Error(codes.Unavailable, "runnertest: cancel refused")
	}
	return s.up.Cancel(ctx, req)
}

func (s *noLiveMetricsServer) Drain(ctx context.Context, req *jobpb.DrainJobRequest) (*jobpb.DrainJobResponse, error) {
	return s.up.Drain(ctx, req)
}

func (s *noLiveMetricsServer) DescribePipelineOptions(ctx context.Context, req *jobpb.DescribePipelineOptionsRequest) (*jobpb.DescribePipelineOptionsResponse, error) {
	return s.up.DescribePipelineOptions(ctx, req)
}

func (s *noLiveMetricsServer) GetStateStream(req *jobpb.GetJobStateRequest, out jobpb.JobService_GetStateStreamServer) error {
	in, err := s.up.GetStateStream(out.Context(), req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

func (s *noLiveMetricsServer) GetMessageStream(req *jobpb.JobMessagesRequest, out jobpb.JobService_GetMessageStreamServer) error {
	in, err := s.up.GetMessageStream(out.Context(), req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

// relay copies a server stream from the job server behind the proxy to the
// proxy's caller until it ends.
func relay[M any](recv func() (M, error), send func(M) error) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := send(m); err != nil {
			return err
		}
	}
}
