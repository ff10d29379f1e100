package bigquery

import (
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// appendTables are written through the Storage Write API; the others by DML.
var appendTables = []string{table.HourlyRevenueChangelog.Name, table.TooLateEvents.Name, table.ConflictEvents.Name, table.QuarantinedEvents.Name, table.SourceCheckpoints.Name}

// numeric is micros sent to a NUMERIC column as its exact decimal string.
type numeric int64

// bqRowType is an append table's row as a proto2 message of its columns:
// TIMESTAMP as int64 microseconds, NUMERIC as a string.
type bqRowType struct {
	table  string
	desc   protoreflect.MessageDescriptor
	proto  *descriptorpb.DescriptorProto
	schema bigquery.Schema
	// epochStrings sends TIMESTAMP as "seconds.micros" text: the emulator
	// (v0.6.6) misreads an int64's sub-second part (250 ms becomes 250 s).
	epochStrings bool
}

// bqRowTypes and bqEmulatorRowTypes hold every append table's row type.
var bqRowTypes, bqEmulatorRowTypes = rowTypes(false), rowTypes(true)

func rowTypes(epochStrings bool) map[string]*bqRowType {
	out := map[string]*bqRowType{}
	for _, t := range appendTables {
		rt, err := newRowType(t, schemaOf(t), epochStrings)
		if err != nil {
			panic(err) // a schema constant this file cannot map: a programming error
		}
		out[t] = rt
	}
	return out
}

func rowTypesFor(emulator bool) map[string]*bqRowType {
	if emulator {
		return bqEmulatorRowTypes
	}
	return bqRowTypes
}

func storageEmulator() bool { return os.Getenv(StorageEmulatorHostEnv) != "" }

func newRowType(table string, schema bigquery.Schema, epochStrings bool) (*bqRowType, error) {
	dp := &descriptorpb.DescriptorProto{Name: proto.String(table)}
	for i, f := range schema {
		var typ descriptorpb.FieldDescriptorProto_Type
		switch {
		case f.Type == bigquery.TimestampFieldType && epochStrings:
			typ = descriptorpb.FieldDescriptorProto_TYPE_STRING
		case f.Type == bigquery.IntegerFieldType, f.Type == bigquery.TimestampFieldType:
			typ = descriptorpb.FieldDescriptorProto_TYPE_INT64
		case f.Type == bigquery.StringFieldType, f.Type == bigquery.NumericFieldType:
			typ = descriptorpb.FieldDescriptorProto_TYPE_STRING
		default:
			return nil, fmt.Errorf("sinks: %s.%s: no Storage Write API mapping for %s", table, f.Name, f.Type)
		}
		label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		if f.Required {
			label = descriptorpb.FieldDescriptorProto_LABEL_REQUIRED
		}
		dp.Field = append(dp.Field, &descriptorpb.FieldDescriptorProto{
			Name: proto.String(f.Name), Number: proto.Int32(int32(i + 1)), Type: typ.Enum(), Label: label.Enum(),
		})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String(table + ".proto"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{dp},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("sinks: %s row descriptor: %w", table, err)
	}
	return &bqRowType{table: table, desc: fd.Messages().Get(0), proto: dp, schema: schema, epochStrings: epochStrings}, nil
}

// deterministic marshals a retried append's rows to the same bytes.
var deterministic = proto.MarshalOptions{Deterministic: true}

// encode builds one row from its column values, in schema order.
func (t *bqRowType) encode(vals ...any) ([]byte, error) {
	if len(vals) != len(t.schema) {
		return nil, fmt.Errorf("sinks: %s row has %d values for %d columns", t.table, len(vals), len(t.schema))
	}
	m := dynamicpb.NewMessage(t.desc)
	fields := t.desc.Fields()
	for i, v := range vals {
		var pv protoreflect.Value
		switch v := v.(type) {
		case string:
			pv = protoreflect.ValueOfString(v)
		case int64:
			pv = protoreflect.ValueOfInt64(v)
		case numeric:
			pv = protoreflect.ValueOfString(ratMicros(int64(v)).FloatString(6))
		case time.Time:
			pv = protoreflect.ValueOfInt64(v.UnixMicro())
			if t.epochStrings {
				us := v.UnixMicro()
				pv = protoreflect.ValueOfString(fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000))
			}
		default:
			return nil, fmt.Errorf("sinks: %s.%s: unsupported value %T", t.table, t.schema[i].Name, v)
		}
		m.Set(fields.Get(i), pv)
	}
	return deterministic.Marshal(m)
}

// encodeRow encodes a record as its table's row (see bqRowType.encode).
func encodeRow[T any](rt map[string]*bqRowType, c table.Codec[T], v T) ([]byte, error) {
	vals := c.Put(nil, v)
	for i, col := range c.Table.Columns {
		vals[i] = bqValue(col, vals[i])
	}
	return rt[c.Table.Name].encode(vals...)
}

// encodeSnapshot is a changelog row, writtenAt fixed before the write step.
func encodeSnapshot(rt map[string]*bqRowType, r model.Row, writtenAt time.Time) ([]byte, error) {
	return encodeRow(rt, table.ChangelogCodec, sink.ChangelogEntry{Row: r, WrittenAt: writtenAt})
}
