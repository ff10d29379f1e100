package localrunner

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
)

// runnerStore models prism v2.77.0's metrics store
// (jobservices/metrics.go): payloads of unknown short ids are stashed under
// the id alone until an answer describes it.
type runnerStore struct {
	keys  map[string]string // short id -> metric name
	stash map[string][]byte
	sums  map[string]int64
}

func newRunnerStore() *runnerStore {
	return &runnerStore{keys: map[string]string{}, stash: map[string][]byte{}, sums: map[string]int64{}}
}

// contribute adds a final bundle response and returns the ids it must ask about.
func (r *runnerStore) contribute(t *testing.T, data map[string][]byte) (unknown []string) {
	for id, p := range data {
		name, ok := r.keys[id]
		if !ok {
			r.stash[id] = p // prism's overwrite
			unknown = append(unknown, id)
			continue
		}
		v, err := coder.DecodeVarInt(bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		r.sums[name] += v
	}
	return unknown
}

func (r *runnerStore) addShortIDs(t *testing.T, md *fnpb.MonitoringInfosMetadataResponse) {
	for id, info := range md.GetMonitoringInfo() {
		r.keys[id] = info.GetLabels()["NAME"]
	}
	stash := r.stash
	r.stash = map[string][]byte{}
	r.contribute(t, stash)
}

func varint(t *testing.T, v int64) []byte {
	var b bytes.Buffer
	if err := coder.EncodeVarInt(v, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func bundleResponse(data map[string][]byte) *fnpb.InstructionResponse {
	return &fnpb.InstructionResponse{Response: &fnpb.InstructionResponse_ProcessBundle{
		ProcessBundle: &fnpb.ProcessBundleResponse{MonitoringData: data}}}
}

// harness answers a metadata request as the Go SDK harness does: from its
// own short ids, nil for an id it does not know.
func harness(ctx context.Context, t *testing.T, ids []string) *fnpb.InstructionResponse {
	req := &fnpb.InstructionRequest{Request: &fnpb.InstructionRequest_MonitoringInfos{
		MonitoringInfos: &fnpb.MonitoringInfosMetadataRequest{MonitoringInfoId: ids}}}
	ctx, err := gateRequest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]string{"1": "read", "2": "counted"}
	infos := map[string]*pipepb.MonitoringInfo{}
	for _, id := range req.GetMonitoringInfos().GetMonitoringInfoId() {
		if name, ok := known[id]; ok {
			infos[id] = &pipepb.MonitoringInfo{Urn: "beam:metric:user:sum_int64:v1", Labels: map[string]string{"NAME": name}}
		} else {
			infos[id] = nil
		}
	}
	resp := &fnpb.InstructionResponse{Response: &fnpb.InstructionResponse_MonitoringInfos{
		MonitoringInfos: &fnpb.MonitoringInfosMetadataResponse{MonitoringInfo: infos}}}
	if err := gateResponse(ctx, req, resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// Two bundles report the same new counter before the runner has asked what
// it means: without the gate the runner keeps one payload, with it both.
func TestMetricGateKeepsConcurrentFirstReports(t *testing.T) {
	for _, gated := range []bool{false, true} {
		ctx := grpcx.WriteWorkerID(context.Background(), t.Name()+map[bool]string{false: "plain", true: "gated"}[gated])
		r := newRunnerStore()
		a := bundleResponse(map[string][]byte{"1": varint(t, 3), "2": varint(t, 1)})
		b := bundleResponse(map[string][]byte{"1": varint(t, 4)})
		if gated {
			for _, resp := range []*fnpb.InstructionResponse{a, b} {
				if err := gateResponse(ctx, nil, resp); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Both responses reach the runner before the first question is answered.
		unknownA := r.contribute(t, a.GetProcessBundle().GetMonitoringData())
		unknownB := r.contribute(t, b.GetProcessBundle().GetMonitoringData())
		r.addShortIDs(t, harness(ctx, t, unknownA).GetMonitoringInfos())
		r.addShortIDs(t, harness(ctx, t, unknownB).GetMonitoringInfos())

		want := map[string]int64{"read": 7, "counted": 1}
		if !gated {
			want["read"] = 4 // the defect the gate exists for: a's 3 is lost
		}
		if r.sums["read"] != want["read"] || r.sums["counted"] != want["counted"] || len(r.stash) != 0 {
			t.Errorf("gated=%v: runner sums %v (stash %v), want %v", gated, r.sums, r.stash, want)
		}
	}
}

// Once the runner has had an id's meaning for settleLag, bundles report it
// under its own id, so the runner's id table stops growing; before that,
// every report is an alias of its own, and the gate forgets an alias once
// asked about it.
func TestMetricGateAliasesOnlyUntilDescribed(t *testing.T) {
	w := &workerGate{described: map[string]time.Time{}, aliases: map[string]string{}}
	t0 := time.Unix(1000, 0)
	first := aliasUndescribed(w, map[string][]byte{"1": {2}}, t0)
	second := aliasUndescribed(w, map[string][]byte{"1": {4}}, t0)
	var ids []string
	for id := range first {
		ids = append(ids, id)
	}
	for id := range second {
		ids = append(ids, id)
	}
	if len(ids) != 2 || ids[0] == ids[1] || ids[0] == "1" || ids[1] == "1" {
		t.Fatalf("aliases %v: want two distinct aliases of 1", ids)
	}
	shorts, asked := askShortIDs(w, ids)
	if len(shorts) != 1 || shorts[0] != "1" || len(asked) != 2 || len(w.aliases) != 0 {
		t.Fatalf("asked %v as %v (aliases left %v)", ids, shorts, w.aliases)
	}
	md := &fnpb.MonitoringInfosMetadataResponse{MonitoringInfo: map[string]*pipepb.MonitoringInfo{"1": {Urn: "u"}, "9": nil}}
	answerAliases(w, asked, md, t0)
	if len(md.MonitoringInfo) != 3 || md.MonitoringInfo[ids[0]] == nil || md.MonitoringInfo[ids[1]] == nil || md.MonitoringInfo["1"] == nil {
		t.Fatalf("answer %v: want 1 and both aliases, no empty entry", md.MonitoringInfo)
	}
	if got := aliasUndescribed(w, map[string][]byte{"1": {2}}, t0.Add(settleLag/2)); got["1"] != nil {
		t.Errorf("within settleLag of the answer: %v, want an alias", got)
	}
	if got := aliasUndescribed(w, map[string][]byte{"1": {2}}, t0.Add(settleLag)); got["1"] == nil || len(got) != 1 {
		t.Errorf("settleLag after the answer: %v, want the short id itself", got)
	}
}
