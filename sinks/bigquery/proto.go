package bigquery

import (
	"fmt"
	"os"
	"time"

	gbq "cloud.google.com/go/bigquery"
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

// bqRowType is an append table's row as a proto2 message of its columns
// (bqType.proto).
type bqRowType struct {
	table *table.Table
	desc  protoreflect.MessageDescriptor
	proto *descriptorpb.DescriptorProto
	// epochStrings sends TIMESTAMP as "seconds.micros" text: the emulator
	// (v0.6.6) misreads an int64's sub-second part (250 ms becomes 250 s).
	epochStrings bool
}

// bqRowTypes and bqEmulatorRowTypes hold every append table's row type.
var bqRowTypes, bqEmulatorRowTypes = rowTypes(false), rowTypes(true)

func rowTypes(epochStrings bool) map[string]*bqRowType {
	out := map[string]*bqRowType{}
	for _, t := range appendTables {
		rt, err := newRowType(tableOf(t), epochStrings)
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

func newRowType(t *table.Table, epochStrings bool) (*bqRowType, error) {
	dp := &descriptorpb.DescriptorProto{Name: proto.String(t.Name)}
	for i, c := range t.Columns {
		typ := bqTypes[c.Type].proto
		if epochStrings && bqTypes[c.Type].field == gbq.TimestampFieldType {
			typ = descriptorpb.FieldDescriptorProto_TYPE_STRING
		}
		label := descriptorpb.FieldDescriptorProto_LABEL_REQUIRED
		if c.Nullable {
			label = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		}
		dp.Field = append(dp.Field, &descriptorpb.FieldDescriptorProto{
			Name: proto.String(c.Name), Number: proto.Int32(int32(i + 1)), Type: typ.Enum(), Label: label.Enum(),
		})
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String(t.Name + ".proto"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{dp},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("sinks: %s row descriptor: %w", t.Name, err)
	}
	return &bqRowType{table: t, desc: fd.Messages().Get(0), proto: dp, epochStrings: epochStrings}, nil
}

// deterministic marshals a retried append's rows to the same bytes.
var deterministic = proto.MarshalOptions{Deterministic: true}

// encode builds one row from a codec's column values (table.Codec.Put).
func (t *bqRowType) encode(vals []any) ([]byte, error) {
	cols := t.table.Columns
	if len(vals) != len(cols) {
		return nil, fmt.Errorf("sinks: %s row has %d values for %d columns", t.table.Name, len(vals), len(cols))
	}
	m := dynamicpb.NewMessage(t.desc)
	fields := t.desc.Fields()
	for i, v := range vals {
		m.Set(fields.Get(i), bqTypes[cols[i].Type].wire(t, v))
	}
	return deterministic.Marshal(m)
}

// timestamp is a TIMESTAMP field's value of us microseconds.
func (t *bqRowType) timestamp(us int64) protoreflect.Value {
	if t.epochStrings {
		return protoreflect.ValueOfString(fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000))
	}
	return protoreflect.ValueOfInt64(us)
}

// encodeRow encodes a record as its table's row.
func encodeRow[T any](rt map[string]*bqRowType, c table.Codec[T], v T) ([]byte, error) {
	return rt[c.Table.Name].encode(c.Put(nil, v))
}

// appendRow is the one mapping of a record to its append table, for Write
// and the write step alike: the table, the key its shard is chosen by, and
// the row (a changelog row and a checkpoint stamped at now).
func appendRow(rt map[string]*bqRowType, v any, now time.Time) (t *table.Table, key string, row []byte, err error) {
	switch v := v.(type) {
	case model.Row:
		return keyedRow(rt, table.ChangelogCodec, sink.ChangelogEntry{Row: v, WrittenAt: now}, v.Key())
	case model.TooLate:
		return keyedRow(rt, table.TooLateCodec, v, v.Position)
	case model.Conflict:
		return keyedRow(rt, table.ConflictCodec, v, v.Position)
	case model.Quarantined:
		return keyedRow(rt, table.QuarantinedCodec, v, v.Position)
	case model.Checkpoint:
		return keyedRow(rt, table.CheckpointCodec, table.CheckpointRow{Checkpoint: v, At: now}, v.Partition)
	}
	panic(fmt.Sprintf("sinks: %T has no BigQuery append table", v))
}

// keyedRow is v encoded as its codec's row, with the codec's table and key.
func keyedRow[T any](rt map[string]*bqRowType, c table.Codec[T], v T, key string) (*table.Table, string, []byte, error) {
	row, err := encodeRow(rt, c, v)
	return c.Table, key, row, err
}
