package localrunner

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc/metadata"
)

// The metric gate makes prism's job metrics complete, so that the figures a
// run reports (summary, progress, conservation check: SPEC §4) can come
// from the runner, wherever the workers run.
//
// Why: prism v2.77.0 loses counter updates. A bundle reports its metrics by
// short id; prism stashes the payload of an id it does not know yet, keyed
// by that id alone (jobservices/metrics.go, unprocessedPayloads), while it
// asks the worker what the id means. A second bundle reporting the same new
// id before the answer overwrites the first one's payload. Each metric's
// first appearance in a job is exposed, so the loss is worst with many small
// concurrent bundles; we measured 20–30 % of small runs with wrong figures.
//
// The gate is a response hook in the SDK worker (hooks travel with the
// job's options, so it runs in whatever process the runner starts): the
// first bundle response that carries a short id goes out at once; a later
// bundle response carrying the same id, before the worker has answered the
// runner's metadata request for it, waits for that answer (and metadataLag
// more, since a hook runs just before its response is sent). Requests other
// than bundles are handled on the harness's receive loop, so the answer is
// never stuck behind a waiting bundle. The state is per job and worker
// process; losing it (a new worker) costs nothing: the new worker's short
// ids are new to the runner too.
const metricGateHook = "revenue_metric_gate"

const (
	// metadataLag is how long after the metadata answer a held response
	// waits, for the answer to be sent and applied first.
	metadataLag = 50 * time.Millisecond
	// gateTimeout bounds a wait, should the runner never ask (it would then
	// not need the answer either).
	gateTimeout = 500 * time.Millisecond
)

func init() {
	hooks.RegisterHook(metricGateHook, func([]string) hooks.Hook { return hooks.Hook{Resp: gateResponse} })
}

// enableMetricGate makes the next submitted job's workers run the gate.
func enableMetricGate() error { return hooks.EnableHook(metricGateHook) }

// gate holds, per worker id (which names the job), the short ids a bundle
// response has carried and whether the worker has described them.
var gate = &gateState{jobs: map[string]map[string]*shortID{}}

type gateState struct {
	mu   sync.Mutex
	jobs map[string]map[string]*shortID
}

// idsOf returns a worker's short ids; the caller holds mu.
func (g *gateState) idsOf(worker string) map[string]*shortID {
	ids := g.jobs[worker]
	if ids == nil {
		ids = map[string]*shortID{}
		g.jobs[worker] = ids
	}
	return ids
}

type shortID struct {
	described chan struct{} // closed metadataLag after the metadata answer
	answered  bool
}

func gateResponse(ctx context.Context, _ *fnpb.InstructionRequest, resp *fnpb.InstructionResponse) error {
	if resp == nil || resp.GetError() != "" {
		return nil // a failed bundle contributes no metrics
	}
	if md := resp.GetMonitoringInfos(); md != nil {
		// The runner asks about ids it saw in bundle responses and in
		// progress reports (which the gate does not hold): either way it
		// knows them from now on.
		gate.mu.Lock()
		ids := gate.idsOf(workerID(ctx))
		for short := range md.GetMonitoringInfo() {
			s := ids[short]
			if s == nil {
				s = &shortID{described: make(chan struct{})}
				ids[short] = s
			}
			if !s.answered {
				s.answered = true
				time.AfterFunc(metadataLag, func() { close(s.described) })
			}
		}
		gate.mu.Unlock()
		return nil
	}
	data := resp.GetProcessBundle().GetMonitoringData()
	if len(data) == 0 {
		return nil
	}
	worker := workerID(ctx)
	deadline := time.Now().Add(gateTimeout)
	for {
		// A response introduces new ids only once it holds for nothing:
		// one that introduced an id and then waited could wait for a
		// response that waits for it.
		gate.mu.Lock()
		ids := gate.idsOf(worker)
		var wait chan struct{}
		for short := range data {
			if s := ids[short]; s != nil && !closed(s.described) {
				wait = s.described
				break
			}
		}
		if wait == nil {
			for short := range data {
				if ids[short] == nil {
					ids[short] = &shortID{described: make(chan struct{})}
				}
			}
			gate.mu.Unlock()
			return nil
		}
		gate.mu.Unlock()
		select {
		case <-wait:
		case <-time.After(time.Until(deadline)):
			slog.Debug("metric gate: the runner did not ask what a metric id means in time; sending the bundle's metrics")
			return nil
		}
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// workerID reads the id the runner gave this worker, which the harness puts
// on its context as outgoing gRPC metadata (grpcx.WriteWorkerID).
func workerID(ctx context.Context) string {
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if ids := md.Get("worker_id"); len(ids) == 1 {
			return ids[0]
		}
	}
	return ""
}
