package sinks

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
)

// Table and view names of the BigQuery sink, from the table contract.
// Nothing a record carries ever becomes part of an identifier, and the
// project and dataset were validated by ParseSpec.
var (
	bqChangelog   = HourlyRevenueChangelog.Name
	bqCurrent     = HourlyRevenue.Name // a view over the changelog
	bqTooLate     = TooLateEvents.Name
	bqConflicts   = ConflictEvents.Name
	bqQuarantined = QuarantinedEvents.Name
	bqDiffs       = ReconcileDiffs.Name
	bqRunConfig   = RunConfig.Name
)

// bqTables are the tables the sink creates: every table of the contract but
// hourly_revenue (a view here).
var bqTables = func() []*Table {
	var out []*Table
	for _, t := range Tables {
		if t != HourlyRevenue {
			out = append(out, t)
		}
	}
	return out
}()

// bqFieldType is a column's BigQuery type. Money is NUMERIC (nine
// fractional digits, so micros are exact).
func bqFieldType(c Column) bigquery.FieldType {
	switch c.Type {
	case Time, WallTime:
		return bigquery.TimestampFieldType
	case Int64:
		return bigquery.IntegerFieldType
	case Money:
		return bigquery.NumericFieldType
	}
	return bigquery.StringFieldType
}

// bqSchema is a table's BigQuery schema.
func bqSchema(t *Table) bigquery.Schema {
	out := make(bigquery.Schema, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = &bigquery.FieldSchema{Name: c.Name, Type: bqFieldType(c), Required: !c.Nullable}
	}
	return out
}

// schemaOf returns a created table's schema.
func schemaOf(table string) bigquery.Schema {
	for _, t := range bqTables {
		if t.Name == table {
			return bqSchema(t)
		}
	}
	panic("sinks: no BigQuery table " + table)
}

// bqIdent quotes a column name: "partition" is a reserved word in
// GoogleSQL.
func bqIdent(name string) string { return "`" + name + "`" }

// sqlType is a column's GoogleSQL type name.
func sqlType(f *bigquery.FieldSchema) string {
	switch f.Type {
	case bigquery.IntegerFieldType:
		return "INT64"
	case bigquery.FloatFieldType:
		return "FLOAT64"
	case bigquery.BooleanFieldType:
		return "BOOL"
	}
	return string(f.Type)
}

// unnestRows is the FROM item of a MERGE's source rows: the @rows parameter
// (an array of structs whose fields are the table's columns, in order) cast
// to the table's row type. The cast is a no-op on BigQuery; it states the
// types, which the emulator's analyzer does not infer for array parameters
// (goccy/bigquery-emulator#234), and it makes a Go struct whose fields drift
// from the schema fail loudly instead of landing in the wrong column.
func unnestRows(table string) string {
	var fields []string
	for _, f := range schemaOf(table) {
		fields = append(fields, bqIdent(f.Name)+" "+sqlType(f))
	}
	return "UNNEST(CAST(@rows AS ARRAY<STRUCT<" + strings.Join(fields, ", ") + ">>))"
}

// currentViewSQL keeps the highest revision of every key: the hourly_revenue
// table of SPEC §5, as a view over the changelog. It returns one row per key
// however often a row was appended (copies of one (key, revision) are the
// same row), and picks deterministically between different rows stored
// under one revision (see revisionOrder).
func (b *BigQuery) currentViewSQL() string {
	return `SELECT ` + strings.Join(HourlyRevenue.Names(), ", ") + `, writer
FROM ` + b.table(bqChangelog) + `
WHERE TRUE
QUALIFY ROW_NUMBER() OVER (PARTITION BY window_start, dims ORDER BY ` + revisionOrder + `) = 1`
}

// revisionOrder ranks a key's changelog rows: the highest revision first.
// Two different rows under one revision only arise when a runner restored
// an older checkpoint after a row of the lost attempt was written (a
// phantom): then the more advanced state, the higher count and the later
// write win, so the restored job's FINAL is never hidden behind a phantom
// and nothing dips; the order is total, so every read agrees.
const revisionOrder = `revision DESC, CASE result_state WHEN 'FINAL' THEN 4 WHEN 'LATE' THEN 3 WHEN 'ON_TIME' THEN 2 ELSE 1 END DESC,
event_count DESC, written_at DESC, writer DESC`

// oncePer is the QUALIFY clause that keeps one row per value of cols: what a
// read of an append-only table needs, since a replayed source or a restarted
// job may append a row again.
func oncePer(cols, order string) string {
	return "\nQUALIFY ROW_NUMBER() OVER (PARTITION BY " + cols + " ORDER BY " + order + ") = 1"
}

// ensureSchema creates the dataset, the tables and the view that are
// missing. An existing table is left as it is.
func (b *BigQuery) ensureSchema(ctx context.Context) error {
	ds := b.client.Dataset(b.dataset)
	if _, err := ds.Metadata(ctx); err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("dataset %s: %w", b.dataset, err)
		}
		if err := ds.Create(ctx, &bigquery.DatasetMetadata{}); err != nil && !createdMeanwhile(err, func() error { _, err := ds.Metadata(ctx); return err }) {
			return fmt.Errorf("create dataset %s: %w", b.dataset, err)
		}
	}
	for _, t := range bqTables {
		md := &bigquery.TableMetadata{Schema: bqSchema(t)}
		if t.Partition != "" {
			md.TimePartitioning = &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: t.Partition}
		}
		if len(t.Clustering) > 0 {
			md.Clustering = &bigquery.Clustering{Fields: t.Clustering}
		}
		if err := b.createIfMissing(ctx, t.Name, md); err != nil {
			return err
		}
	}
	if err := b.createIfMissing(ctx, bqCurrent, &bigquery.TableMetadata{ViewQuery: b.currentViewSQL()}); err != nil {
		return err
	}
	_, known, err := b.exec(ctx, "probe DML statistics", `DELETE FROM `+b.table(bqRunConfig)+` WHERE FALSE`)
	b.dmlStats = known
	return err
}

func (b *BigQuery) createIfMissing(ctx context.Context, name string, md *bigquery.TableMetadata) error {
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

// createdMeanwhile reports whether a failed create lost a race with another
// opener (a launcher and its workers open the sink at the same time):
// BigQuery answers 409, the emulator 500 "already created", so the resource
// is looked up again.
func createdMeanwhile(err error, lookup func() error) bool {
	return isAlreadyExists(err) || lookup() == nil
}

// bqValue turns a codec's column value into what the BigQuery clients take:
// time.Time for TIMESTAMP, numeric (micros) for NUMERIC.
func bqValue(c Column, v any) any {
	switch c.Type {
	case Time:
		return msTime(v.(int64))
	case WallTime:
		return v.(time.Time).UTC()
	case Money:
		return numeric(v.(int64))
	}
	return v
}

// fromBQ turns a result row of t's columns (as the query client returns
// them: time.Time, *big.Rat, int64, string or nil) into a codec's values.
func fromBQ(t *Table, row []bigquery.Value) ([]any, error) {
	if len(row) != len(t.Columns) {
		return nil, fmt.Errorf("%s: %d values for %d columns", t.Name, len(row), len(t.Columns))
	}
	out := make([]any, len(row))
	for i, c := range t.Columns {
		v := row[i]
		var ok bool
		switch c.Type {
		case Time:
			var ts time.Time
			ts, ok = v.(time.Time)
			out[i] = ts.UnixMilli()
		case WallTime:
			// A read may select NULL for it (the view keeps no written_at).
			out[i], ok = v.(time.Time)
			ok = ok || v == nil
			if v == nil {
				out[i] = time.Time{}
			}
		case Money:
			var r *big.Rat
			if r, ok = v.(*big.Rat); ok {
				m := new(big.Rat).Mul(r, big.NewRat(1_000_000, 1))
				ok = m.IsInt() && m.Num().IsInt64()
				out[i] = m.Num().Int64()
			}
		case Int64:
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

// bqRowsParam is records as an ARRAY<STRUCT<...>> query parameter whose
// fields are their table's columns, in order (see unnestRows). A NULL
// travels as 0 (see insertMissingSQL).
func bqRowsParam[T any](c codec[T], recs []T) *bigquery.QueryParameterValue {
	elem := &bigquery.StandardSQLDataType{TypeKind: "STRUCT", StructType: &bigquery.StandardSQLStructType{}}
	for _, col := range c.t.Columns {
		elem.StructType.Fields = append(elem.StructType.Fields, &bigquery.StandardSQLField{
			Name: col.Name, Type: &bigquery.StandardSQLDataType{TypeKind: sqlType(&bigquery.FieldSchema{Type: bqFieldType(col)})}})
	}
	p := &bigquery.QueryParameterValue{Type: bigquery.StandardSQLDataType{TypeKind: "ARRAY", ArrayElementType: elem}}
	var vals []any
	for _, r := range recs {
		vals = c.put(vals[:0], r)
		sv := make(map[string]bigquery.QueryParameterValue, len(vals))
		for i, col := range c.t.Columns {
			v := vals[i]
			if v == nil {
				v = int64(0)
			}
			v = bqValue(col, v)
			if n, ok := v.(numeric); ok {
				v = ratMicros(int64(n))
			}
			sv[col.Name] = bigquery.QueryParameterValue{Type: *elem.StructType.Fields[i].Type, Value: v}
		}
		p.ArrayValue = append(p.ArrayValue, bigquery.QueryParameterValue{StructValue: sv})
	}
	return p
}
