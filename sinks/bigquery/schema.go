package bigquery

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/sinks/internal/table"

	gbq "cloud.google.com/go/bigquery"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// bqTables are the tables the sink creates (hourly_revenue is a view).
var bqTables = slices.DeleteFunc(slices.Clone(table.Tables), func(t *table.Table) bool { return t == table.HourlyRevenue })

// bqType is a column type's BigQuery forms: schema type (NUMERIC keeps
// micros exact), GoogleSQL name (casts, query parameters), Storage Write API
// field and a codec's value as it (TIMESTAMP as int64 microseconds, NUMERIC
// as decimal text), a codec's value as a query parameter, and a query
// result's value as a codec's (ok false: not of this type).
type bqType struct {
	field gbq.FieldType
	sql   string
	proto descriptorpb.FieldDescriptorProto_Type
	wire  func(t *bqRowType, v any) protoreflect.Value
	param func(v any) any
	read  func(v gbq.Value) (any, bool)
}

func same(v any) any { return v }

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ratMicros is an exact NUMERIC value for an amount in micros.
func ratMicros(m int64) *big.Rat { return big.NewRat(m, 1_000_000) }

// bqTypes is indexed by table.Type: the row encoder's lookup is on the write path.
var bqTypes = [...]bqType{
	table.Time: {gbq.TimestampFieldType, "TIMESTAMP", descriptorpb.FieldDescriptorProto_TYPE_INT64,
		func(t *bqRowType, v any) protoreflect.Value { return t.timestamp(v.(int64) * 1000) },
		func(v any) any { return msTime(v.(int64)) },
		func(v gbq.Value) (any, bool) { t, ok := v.(time.Time); return t.UnixMilli(), ok }},
	table.WallTime: {gbq.TimestampFieldType, "TIMESTAMP", descriptorpb.FieldDescriptorProto_TYPE_INT64,
		func(t *bqRowType, v any) protoreflect.Value { return t.timestamp(v.(time.Time).UnixMicro()) },
		func(v any) any { return v.(time.Time).UTC() },
		func(v gbq.Value) (any, bool) {
			t, ok := v.(time.Time)
			return t, ok || v == nil // no row joined
		}},
	table.String: {gbq.StringFieldType, "STRING", descriptorpb.FieldDescriptorProto_TYPE_STRING,
		func(_ *bqRowType, v any) protoreflect.Value { return protoreflect.ValueOfString(v.(string)) },
		same, func(v gbq.Value) (any, bool) { s, ok := v.(string); return s, ok }},
	table.Int64: {gbq.IntegerFieldType, "INT64", descriptorpb.FieldDescriptorProto_TYPE_INT64,
		func(_ *bqRowType, v any) protoreflect.Value { return protoreflect.ValueOfInt64(v.(int64)) },
		same, func(v gbq.Value) (any, bool) { n, ok := v.(int64); return n, ok }},
	table.Money: {gbq.NumericFieldType, "NUMERIC", descriptorpb.FieldDescriptorProto_TYPE_STRING,
		func(_ *bqRowType, v any) protoreflect.Value {
			return protoreflect.ValueOfString(ratMicros(v.(int64)).FloatString(6))
		},
		func(v any) any { return ratMicros(v.(int64)) },
		func(v gbq.Value) (any, bool) {
			r, ok := v.(*big.Rat)
			if !ok {
				return nil, false
			}
			m := new(big.Rat).Mul(r, big.NewRat(1_000_000, 1))
			return m.Num().Int64(), m.IsInt() && m.Num().IsInt64()
		}},
}

func bqSchema(t *table.Table) gbq.Schema {
	out := make(gbq.Schema, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = &gbq.FieldSchema{Name: c.Name, Type: bqTypes[c.Type].field, Required: !c.Nullable}
	}
	return out
}

// tableOf is the table the sink creates under name.
func tableOf(name string) *table.Table {
	if i := slices.IndexFunc(bqTables, func(t *table.Table) bool { return t.Name == name }); i >= 0 {
		return bqTables[i]
	}
	panic("sinks: no BigQuery table " + name)
}

// bqIdent quotes a column name: "partition" is reserved in GoogleSQL.
func bqIdent(name string) string { return "`" + name + "`" }

// unnestRows is the @rows parameter cast to the table's row type: the
// emulator does not infer array parameters' types (goccy/bigquery-emulator#234),
// and a drifting struct fails loudly instead of filling the wrong column.
func unnestRows(name string) string {
	fields := slicesx.Map(tableOf(name).Columns, func(c table.Column) string { return bqIdent(c.Name) + " " + bqTypes[c.Type].sql })
	return "UNNEST(CAST(@rows AS ARRAY<STRUCT<" + strings.Join(fields, ", ") + ">>))"
}

// currentViewSQL is hourly_revenue as a view: the highest revision of each key.
func (b *BigQuery) currentViewSQL() string {
	return `SELECT ` + strings.Join(table.HourlyRevenue.Names(), ", ") + `, writer
FROM ` + b.table(table.HourlyRevenueChangelog.Name) + `
WHERE TRUE` + oncePer("window_start, dims", revisionOrder)
}

// revisionOrder ranks a key's changelog rows, highest revision first. Two
// rows under one revision (a phantom of an attempt lost to a restored
// checkpoint) rank by state, count and write time, so FINAL is never hidden
// and nothing dips; the order is total, so every read agrees.
const revisionOrder = `revision DESC, CASE result_state WHEN 'FINAL' THEN 4 WHEN 'LATE' THEN 3 WHEN 'ON_TIME' THEN 2 ELSE 1 END DESC,
event_count DESC, written_at DESC, writer DESC`

// oncePer keeps one row per value of cols: an appended row may be repeated.
func oncePer(cols, order string) string {
	return "\nQUALIFY ROW_NUMBER() OVER (PARTITION BY " + cols + " ORDER BY " + order + ") = 1"
}

// ensureSchema creates the missing dataset, tables and view.
func (b *BigQuery) ensureSchema(ctx context.Context) error {
	ds := b.client.Dataset(b.dataset)
	if err := createIfMissing("dataset "+b.dataset, func() error { _, err := ds.Metadata(ctx); return err },
		func() error { return ds.Create(ctx, &gbq.DatasetMetadata{}) }); err != nil {
		return err
	}
	// The view last: it reads the changelog.
	for _, t := range append(slices.Clone(bqTables), table.HourlyRevenue) {
		md := &gbq.TableMetadata{Schema: bqSchema(t)}
		if t == table.HourlyRevenue {
			md = &gbq.TableMetadata{ViewQuery: b.currentViewSQL()}
		}
		if t.Partition != "" {
			md.TimePartitioning = &gbq.TimePartitioning{Type: gbq.DayPartitioningType, Field: t.Partition}
		}
		if len(t.Clustering) > 0 {
			md.Clustering = &gbq.Clustering{Fields: t.Clustering}
		}
		tb := ds.Table(t.Name)
		if err := createIfMissing("table "+t.Name, func() error { _, err := tb.Metadata(ctx); return err },
			func() error { return tb.Create(ctx, md) }); err != nil {
			return err
		}
	}
	return nil
}

// reportsDMLStats says whether the server reports the rows a DML statement
// changed (the emulator does not), probing once per handle with a statement
// that changes nothing. Only the DML writers ask (the launcher, reconcile):
// a worker's Open runs no DML, since BigQuery queues at most 20 mutating
// statements per table and every worker's instances open the sink at once.
func (b *BigQuery) reportsDMLStats(ctx context.Context) (bool, error) {
	b.probe.Lock()
	defer b.probe.Unlock()
	if b.dmlStats == nil {
		_, known, err := b.exec(ctx, "probe DML statistics", `DELETE FROM `+b.table(table.RunConfig.Name)+` WHERE FALSE`)
		if err != nil {
			return false, err
		}
		b.dmlStats = &known
	}
	return *b.dmlStats, nil
}

// createIfMissing creates what with create unless lookup finds it. A create
// that lost a race with another opener (BigQuery answers 409, the emulator
// 500) is no error once lookup finds the resource.
func createIfMissing(what string, lookup, create func() error) error {
	if err := lookup(); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := create(); err != nil && !isAlreadyExists(err) && lookup() != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	return nil
}

// fromBQ turns a query result row of t's columns into a codec's values.
func fromBQ(t *table.Table, row []gbq.Value) ([]any, error) {
	if len(row) != len(t.Columns) {
		return nil, fmt.Errorf("%s: %d values for %d columns", t.Name, len(row), len(t.Columns))
	}
	out := make([]any, len(row))
	for i, c := range t.Columns {
		if c.Nullable && row[i] == nil {
			continue // NULL stays nil: a diff never applied has no applied_revision
		}
		var ok bool
		if out[i], ok = bqTypes[c.Type].read(row[i]); !ok {
			return nil, fmt.Errorf("%s.%s: unexpected value %v (%T)", t.Name, c.Name, row[i], row[i])
		}
	}
	return out, nil
}

// bqRowsParam is records as the @rows parameter (unnestRows); NULL travels
// as 0 (see insertMissingSQL).
func bqRowsParam[T any](c table.Codec[T], recs []T) *gbq.QueryParameterValue {
	elem := &gbq.StandardSQLDataType{TypeKind: "STRUCT", StructType: &gbq.StandardSQLStructType{}}
	for _, col := range c.Table.Columns {
		elem.StructType.Fields = append(elem.StructType.Fields, &gbq.StandardSQLField{
			Name: col.Name, Type: &gbq.StandardSQLDataType{TypeKind: bqTypes[col.Type].sql}})
	}
	p := &gbq.QueryParameterValue{Type: gbq.StandardSQLDataType{TypeKind: "ARRAY", ArrayElementType: elem}}
	var vals []any
	for _, r := range recs {
		vals = c.Put(vals[:0], r)
		sv := make(map[string]gbq.QueryParameterValue, len(vals))
		for i, col := range c.Table.Columns {
			v := vals[i]
			if v == nil {
				v = int64(0)
			}
			sv[col.Name] = gbq.QueryParameterValue{Type: *elem.StructType.Fields[i].Type, Value: bqTypes[col.Type].param(v)}
		}
		p.ArrayValue = append(p.ArrayValue, gbq.QueryParameterValue{StructValue: sv})
	}
	return p
}
