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

// The metric gate makes prism's job metrics complete, so that the figures a
// run reports (summary, progress, conservation check: SPEC §4) can come
// from the runner, wherever the workers run, loopback included.
//
// Why: prism v2.77.0 loses counter updates. A bundle reports its metrics by
// short id; prism stashes the payload of an id it does not know yet, keyed
// by that id alone (jobservices/metrics.go, unprocessedPayloads), while it
// asks the worker what the id means. A second bundle reporting the same new
// id before the answer is applied overwrites the first one's payload. Each
// metric's first appearance in a job is exposed, so the loss is worst with
// many small concurrent bundles; we measured 20–30 % of small runs with
// wrong figures.
//
// The gate is a request and a response hook in the SDK worker (hooks
// travel with the job's options, so they run in whatever process the
// runner starts). It never waits: the Go SDK runs every request and
// response hook under one process-wide mutex (core/util/hooks,
// RunRequestHooks/RunResponseHooks), so a hook that waits for the runner's
// metadata request also keeps that request from being handled, and the
// wait can only end by timing out (the first gate did that). Instead, a
// bundle response that carries an id the runner may not know yet has it
// renamed to an alias used by that response alone, so no two stashed
// payloads share a key. When the runner asks what an alias means, the
// request hook asks the harness about the short id instead, and the
// response hook adds the alias to the answer, which thus teaches the
// runner the short id too. Once the runner has had the answer for an id
// for settleLag, bundles report it under its own id again, so the runner's
// id table stops growing. Progress responses are left alone: prism keeps
// only the latest progress value per metric anyway, and the launcher reads
// the committed (final) metrics.
//
// The state is the worker's own, like the harness's short ids it renames:
// per job (worker id) and worker process. A new worker starts with none,
// which costs nothing: its ids are aliased until described.
//
// Only on prism (IsPrism; UseSafeOptions switches it off for every other
// runner, TestPrismWorkaroundsOnlyOnPrism). Elsewhere nothing replaces it:
// the runner's own metrics are taken as they come, and where a runner gives
// none while the job runs (Flink's job server, Dataflow:
// capability.LiveMetrics) nothing relies on them; resume points are then
// not sealed during the run (app/launch/seal.go, docs/restart.md).
const metricGateHook = "revenue_metric_gate"

// settleLag is how long after the worker's answer for an id bundles still
// report it under an alias: prism applies an answer microseconds after it
// arrives, but on another goroutine than the one that stashes the next
// bundle's payload. An alias only costs the runner one more metadata
// request.
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
	// described holds when the worker answered the runner's question
	// about a short id.
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

// gateRequest rewrites the runner's metadata request: an alias is asked
// as its short id, which the harness knows, and the aliases go on the
// context to the response hook.
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
	if md := resp.GetMonitoringInfos(); md != nil {
		asked, _ := ctx.Value(aliasesKey{}).(map[string]string)
		gate.mu.Lock()
		defer gate.mu.Unlock()
		answerAliases(gate.of(workerID(ctx)), asked, md, now)
		return nil
	}
	pb := resp.GetProcessBundle()
	if len(pb.GetMonitoringData()) == 0 {
		return nil
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	pb.MonitoringData = aliasUndescribed(gate.of(workerID(ctx)), pb.GetMonitoringData(), now)
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

// answerAliases completes the worker's answer to the runner's metadata
// request: each alias asked about is described as its short id, which the
// answer carries too. Every id in the answer counts as described from now.
func answerAliases(w *workerGate, asked map[string]string, md *fnpb.MonitoringInfosMetadataResponse, now time.Time) {
	for short, info := range md.GetMonitoringInfo() {
		if info == nil {
			// An id the harness does not know: leave it out rather than
			// send an empty entry.
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
