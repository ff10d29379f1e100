package localrunner

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc/metadata"
)

// The metric gate makes prism's job metrics complete: prism v2.77.0 stashes
// the payload of an unknown short id keyed by that id alone
// (jobservices/metrics.go), so a second bundle overwrites it (20–30 % of small
// runs had wrong figures). A worker hook that never waits renames such ids in
// bundle responses to aliases of their own, and answers the runner's question
// about an alias with the short id's description; after settleLag an id is
// reported as itself. Only on prism (UseSafeOptions).
const metricGateHook = "revenue_metric_gate"

// settleLag is how long after the worker's answer for an id bundles still
// alias it: prism applies the answer on another goroutine than the one that
// stashes the next payload, and an alias only costs one more metadata request.
const settleLag = 2 * time.Second

func init() {
	hooks.RegisterHook(metricGateHook, func([]string) hooks.Hook { return hooks.Hook{Req: gateRequest, Resp: gateResponse} })
}

// enableMetricGate makes the next submitted job's workers run the gate.
func enableMetricGate() error { return hooks.EnableHook(metricGateHook) }

// gate holds each worker's state, by worker id (which names the job).
var gate = &gateState{workers: map[string]*workerGate{}}

type gateState struct {
	mu      sync.Mutex
	workers map[string]*workerGate
}

type workerGate struct {
	// described holds when the worker answered about a short id.
	described map[string]time.Time
	// aliases maps an alias not yet asked about to its short id.
	aliases map[string]string
	seq     int64
}

// of returns a worker's state; the caller holds mu.
func (g *gateState) of(worker string) *workerGate {
	w := g.workers[worker]
	if w == nil {
		w = &workerGate{described: map[string]time.Time{}, aliases: map[string]string{}}
		g.workers[worker] = w
	}
	return w
}

type aliasesKey struct{}

// gateRequest asks the harness about an alias's short id, and passes the
// aliases on the context to the response hook.
func gateRequest(ctx context.Context, req *fnpb.InstructionRequest) (context.Context, error) {
	mr := req.GetMonitoringInfos()
	if mr == nil {
		return ctx, nil
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	ids, asked := askShortIDs(gate.of(workerID(ctx)), mr.GetMonitoringInfoId())
	mr.MonitoringInfoId = ids
	return context.WithValue(ctx, aliasesKey{}, asked), nil
}

func gateResponse(ctx context.Context, _ *fnpb.InstructionRequest, resp *fnpb.InstructionResponse) error {
	if resp == nil || resp.GetError() != "" {
		return nil // a failed bundle contributes no metrics
	}
	now := time.Now()
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if md := resp.GetMonitoringInfos(); md != nil {
		asked, _ := ctx.Value(aliasesKey{}).(map[string]string)
		answerAliases(gate.of(workerID(ctx)), asked, md, now)
	} else if pb := resp.GetProcessBundle(); len(pb.GetMonitoringData()) > 0 {
		pb.MonitoringData = aliasUndescribed(gate.of(workerID(ctx)), pb.GetMonitoringData(), now)
	}
	return nil
}

// aliasUndescribed renames the ids of data the runner may not know yet to
// aliases of their own.
func aliasUndescribed(w *workerGate, data map[string][]byte, now time.Time) map[string][]byte {
	out := make(map[string][]byte, len(data))
	for short, payload := range data {
		if at, ok := w.described[short]; ok && now.Sub(at) >= settleLag {
			out[short] = payload
			continue
		}
		w.seq++
		alias := short + "~" + strconv.FormatInt(w.seq, 36)
		w.aliases[alias] = short
		out[alias] = payload
	}
	return out
}

// askShortIDs turns the ids the runner asks about into the short ids the
// harness knows, and returns the aliases among them (alias to short id).
func askShortIDs(w *workerGate, ids []string) (shorts []string, asked map[string]string) {
	asked = map[string]string{}
	seen := map[string]bool{}
	for _, id := range ids {
		short, ok := w.aliases[id]
		if ok {
			delete(w.aliases, id)
			asked[id] = short
		} else {
			short = id
		}
		if !seen[short] {
			seen[short] = true
			shorts = append(shorts, short)
		}
	}
	return shorts, asked
}

// answerAliases describes each alias asked about as its short id; every id in
// the answer counts as described from now.
func answerAliases(w *workerGate, asked map[string]string, md *fnpb.MonitoringInfosMetadataResponse, now time.Time) {
	for short, info := range md.GetMonitoringInfo() {
		if info == nil { // unknown to the harness: no empty entry
			delete(md.MonitoringInfo, short)
			continue
		}
		if _, ok := w.described[short]; !ok {
			w.described[short] = now
		}
	}
	for alias, short := range asked {
		if info := md.GetMonitoringInfo()[short]; info != nil {
			md.MonitoringInfo[alias] = info
		}
	}
}

// workerID reads the worker's id from outgoing gRPC metadata (grpcx.WriteWorkerID).
func workerID(ctx context.Context) string {
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if ids := md.Get("worker_id"); len(ids) == 1 {
			return ids[0]
		}
	}
	return ""
}
