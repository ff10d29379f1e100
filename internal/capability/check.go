package capability

import (
	"fmt"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Uses lists the features a pipeline proto's ParDo payloads ask of its
// runner, with the unique names of the transforms that ask, in id order.
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
	for _, id := range slices.Sorted(maps.Keys(comps.GetTransforms())) {
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

// Check refuses, as a *Refusal, a pipeline proto that uses what the
// profile lacks (the first lack in the profile's order).
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
