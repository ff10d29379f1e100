package reconcile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/jsonx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/triggers"
)

// compareFn's settings are its serialised configuration: Beam encodes a
// DoFn's exported fields with jsonx (encoding/json), so every one of them
// must survive that trip to the worker.
func TestCompareFnSerialises(t *testing.T) {
	fn := &compareFn{CompareSettings: CompareSettings{
		Sink:            sink.Spec{Scheme: sink.SchemeBigQuery, Project: "revenue-test", Dataset: "revenue"},
		Range:           Range{From: 1_000, To: 2_000, HasFrom: true, HasTo: true},
		Triggers:        triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour},
		ToleranceMicros: 10_000,
	}}
	data, err := jsonx.Marshal(fn)
	if err != nil {
		t.Fatal(err)
	}
	var got compareFn
	if err := jsonx.Unmarshal(&got, data); err != nil {
		t.Fatal(err)
	}
	if got.Sink != fn.Sink || got.Range != fn.Range || got.Triggers != fn.Triggers || got.ToleranceMicros != fn.ToleranceMicros {
		t.Errorf("compareFn after a JSON round trip = %+v, want %+v (%s)", got, *fn, data)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || len(fields) != 4 {
		t.Errorf("compareFn serialises as %s, want its four settings", data)
	}
}

// The comparison step and the result formatting run through the register
// package's generated callers, not reflection.
func TestCompareStepRegistered(t *testing.T) {
	if _, ok := reflectx.WrapMethods(&compareFn{}); !ok {
		t.Error("compareFn: no registered method wrappers")
	}
	for _, fn := range []any{formatResult} {
		if c := fmt.Sprintf("%T", reflectx.MakeFunc(fn)); c == "*reflectx.reflectFunc" {
			t.Errorf("%s: called by reflection", reflectx.FunctionName(fn))
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(func(Comparison) {})} {
		if !exec.IsEmitterRegistered(typ) {
			t.Errorf("emitter %v not registered", typ)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(func(*string, *Totals) bool { return false }), reflect.TypeOf(func(*Comparison) bool { return false })} {
		if !exec.IsInputRegistered(typ) {
			t.Errorf("side input iterator %v not registered", typ)
		}
	}
}
