package bigquery

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// decode returns a row's column values by name (int64 for INTEGER and
// TIMESTAMP, string for STRING and NUMERIC): what the fake write service of
// the tests stores.
func (t *bqRowType) decode(b []byte) (map[string]any, error) {
	m := dynamicpb.NewMessage(t.desc)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("sinks: decode %s row: %w", t.table.Name, err)
	}
	out := map[string]any{}
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		out[string(f.Name())] = v.Interface()
		return true
	})
	return out, nil
}
