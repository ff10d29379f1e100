package capability

import (
	"fmt"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Uses lists the features a pipeline proto asks of its runner, by the
// transforms (unique names) that ask, in the order of the transforms'
// ids: what its ParDo payloads declare (timer families by time domain,
// state specs by type, bundle finalization, restrictions) and whether it
// is bounded.
func Uses(p *pipepb.Pipeline) (map[Feature][]string, error) {
	uses := map[Feature][]string{}
	add := func(f Feature, name string) {
		if !slices.Contains(uses[f], name) {
			uses[f] = append(uses[f], name)
		}
	}
	comps := p.GetComponents()
	bounded := true
	for _, pc := range comps.GetPcollections() {
		if pc.GetIsBounded() != pipepb.IsBounded_BOUNDED {
			bounded = false
		}
	}
	ids := make([]string, 0, len(comps.GetTransforms()))
	for id := range comps.GetTransforms() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := comps.GetTransforms()[id]
		if t.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
			continue
		}
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pd); err != nil {
			return nil, fmt.Errorf("pipeline proto: transform %s: ParDo payload: %w", t.GetUniqueName(), err)
		}
		name := t.GetUniqueName()
		for _, tf := range pd.GetTimerFamilySpecs() {
			switch tf.GetTimeDomain() {
			case pipepb.TimeDomain_PROCESSING_TIME:
				add(ProcessingTimeTimers, name)
				if bounded {
					add(ProcessingTimeTimersInBatch, name)
				}
			case pipepb.TimeDomain_EVENT_TIME:
				add(EventTimeTimers, name)
			}
		}
		for _, ss := range pd.GetStateSpecs() {
			switch ss.GetSpec().(type) {
			case *pipepb.StateSpec_MapSpec, *pipepb.StateSpec_MultimapSpec:
				add(MapState, name)
			case *pipepb.StateSpec_SetSpec:
				add(SetState, name)
			case *pipepb.StateSpec_OrderedListSpec:
				add(OrderedListState, name)
			}
			add(UserState, name)
		}
		if pd.GetRequestsFinalization() {
			add(BundleFinalization, name)
		}
		if pd.GetRestrictionCoderId() != "" {
			add(SelfCheckpointing, name)
		}
	}
	return uses, nil
}

// Check refuses a pipeline proto that needs what the profile lacks: the
// first lack of the profile's list that a transform uses, as a *Refusal
// (one line). The launcher runs it before every submission and for
// --dry-run.
func Check(p *pipepb.Pipeline, prof Profile) error {
	uses, err := Uses(p)
	if err != nil {
		return err
	}
	for _, l := range prof.Lacks {
		if where := uses[l.Feature]; len(where) > 0 {
			return &Refusal{Runner: prof.Name, Lack: l, Where: where[0]}
		}
	}
	return nil
}
