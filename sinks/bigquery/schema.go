package bigquery

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/sinks/internal/table"

	gbq "cloud.google.com/go/bigquery"
	"google.golang.org/protobuf/types/descriptorpb"
)

// bqTables are the tables the sink creates (hourly_revenue is a view).
var bqTables = func() []*table.Table {
	var out []*table.Table
	for _, t := range table.Tables {
		if t != table.HourlyRevenue {
			out = append(out, t)
		}
	}
	return out
}()

// bqType is a column type's BigQuery forms, mapped here once: its schema
// type (NUMERIC keeps micros exact), its GoogleSQL name (casts and query
// parameters) and its Storage Write API field (bqRowType: TIMESTAMP as int64
// microseconds, NUMERIC as its decimal string).
type bqType struct {
	field gbq.FieldType
	sql   string
	proto descriptorpb.FieldDescriptorProto_Type
}

var bqTypes = map[table.Type]bqType{
	table.Time:     {gbq.TimestampFieldType, "TIMESTAMP", descriptorpb.FieldDescriptorProto_TYPE_INT64},
	table.WallTime: {gbq.TimestampFieldType, "TIMESTAMP", descriptorpb.FieldDescriptorProto_TYPE_INT64},
	table.String:   {gbq.StringFieldType, "STRING", descriptorpb.FieldDescriptorProto_TYPE_STRING},
	table.Int64:    {gbq.IntegerFieldType, "INT64", descriptorpb.FieldDescriptorProto_TYPE_INT64},
	table.Money:    {gbq.NumericFieldType, "NUMERIC", descriptorpb.FieldDescriptorProto_TYPE_STRING},
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
	for _, t := range bqTables {
		if t.Name == name {
			return t
		}
	}
	panic("sinks: no BigQuery table " + name)
}

// bqIdent quotes a column name: "partition" is reserved in GoogleSQL.
func bqIdent(name string) string { return "`" + name + "`" }

// unnestRows is the @rows parameter cast to the table's row type: the
// emulator does not infer array parameters' types (goccy/bigquery-emulator#234),
// and a drifting struct fails loudly instead of filling the wrong column.
func unnestRows(table string) string {
	var fields []string
	for _, c := range tableOf(table).Columns {
		fields = append(fields, bqIdent(c.Name)+" "+bqTypes[c.Type].sql)
	}
	return "UNNEST(CAST(@rows AS ARRAY<STRUCT<" + strings.Join(fields, ", ") + ">>))"
}

// currentViewSQL is hourly_revenue as a view: the highest revision of each key.
func (b *BigQuery) currentViewSQL() string {
	return `SELECT ` + strings.Join(table.HourlyRevenue.Names(), ", ") + `, writer
FROM ` + b.table(table.HourlyRevenueChangelog.Name) + `
WHERE TRUE
QUALIFY ROW_NUMBER() OVER (PARTITION BY window_start, dims ORDER BY ` + revisionOrder + `) = 1`
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
	if _, err := ds.Metadata(ctx); err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("dataset %s: %w", b.dataset, err)
		}
		if err := ds.Create(ctx, &gbq.DatasetMetadata{}); err != nil && !createdMeanwhile(err, func() error { _, err := ds.Metadata(ctx); return err }) {
			return fmt.Errorf("create dataset %s: %w", b.dataset, err)
		}
	}
	for _, t := range bqTables {
		md := &gbq.TableMetadata{Schema: bqSchema(t)}
		if t.Partition != "" {
			md.TimePartitioning = &gbq.TimePartitioning{Type: gbq.DayPartitioningType, Field: t.Partition}
		}
		if len(t.Clustering) > 0 {
			md.Clustering = &gbq.Clustering{Fields: t.Clustering}
		}
		if err := b.createIfMissing(ctx, t.Name, md); err != nil {
			return err
		}
	}
	if err := b.createIfMissing(ctx, table.HourlyRevenue.Name, &gbq.TableMetadata{ViewQuery: b.currentViewSQL()}); err != nil {
		return err
	}
	_, known, err := b.exec(ctx, "probe DML statistics", `DELETE FROM `+b.table(table.RunConfig.Name)+` WHERE FALSE`)
	b.dmlStats = known
	return err
}

func (b *BigQuery) createIfMissing(ctx context.Context, name string, md *gbq.TableMetadata) error {
	t := b.client.Dataset(b.dataset).Table(name)
	if _, err := t.Metadata(ctx); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("table %s: %w", name, err)
	}
	if err := t.Create(ctx, md); err != nil && !createdMeanwhile(err, func() error { _, err := t.Metadata(ctx); return err }) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	return nil
}

// createdMeanwhile reports a create that lost a race with another opener
// (BigQuery answers 409, the emulator 500), by looking the resource up.
func createdMeanwhile(err error, lookup func() error) bool {
	return isAlreadyExists(err) || lookup() == nil
}

// bqValue turns a codec's value into what a query parameter takes.
func bqValue(c table.Column, v any) any {
	switch c.Type {
	case table.Time:
		return msTime(v.(int64))
	case table.WallTime:
		return v.(time.Time).UTC()
	case table.Money:
		return ratMicros(v.(int64))
	}
	return v
}

// fromBQ turns a query result row of t's columns into a codec's values.
func fromBQ(t *table.Table, row []gbq.Value) ([]any, error) {
	if len(row) != len(t.Columns) {
		return nil, fmt.Errorf("%s: %d values for %d columns", t.Name, len(row), len(t.Columns))
	}
	out := make([]any, len(row))
	for i, c := range t.Columns {
		v := row[i]
		var ok bool
		switch c.Type {
		case table.Time:
			var ts time.Time
			ts, ok = v.(time.Time)
			out[i] = ts.UnixMilli()
		case table.WallTime:
			out[i], ok = v.(time.Time)
			ok = ok || v == nil
			if v == nil {
				out[i] = time.Time{}
			}
		case table.Money:
			var r *big.Rat
			if r, ok = v.(*big.Rat); ok {
				m := new(big.Rat).Mul(r, big.NewRat(1_000_000, 1))
				ok = m.IsInt() && m.Num().IsInt64()
				out[i] = m.Num().Int64()
			}
		case table.Int64:
			out[i], ok = v.(int64)
			ok = ok || c.Nullable && v == nil
		default:
			out[i], ok = v.(string)
		}
		if !ok {
			return nil, fmt.Errorf("%s.%s: unexpected value %v (%T)", t.Name, c.Name, v, v)
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
			sv[col.Name] = gbq.QueryParameterValue{Type: *elem.StructType.Fields[i].Type, Value: bqValue(col, v)}
		}
		p.ArrayValue = append(p.ArrayValue, gbq.QueryParameterValue{StructValue: sv})
	}
	return p
}
