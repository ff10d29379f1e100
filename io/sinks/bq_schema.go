package sinks

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/bigquery"
)

// Table and view names of the BigQuery sink. They are constants: nothing a
// record carries ever becomes part of an identifier, and the project and
// dataset were validated by ParseSpec.
const (
	bqChangelog   = "hourly_revenue_changelog"
	bqCurrent     = "hourly_revenue"
	bqTooLate     = "too_late_events"
	bqConflicts   = "conflict_events"
	bqQuarantined = "quarantined_events"
	bqDiffs       = "reconcile_diffs"
	bqRunConfig   = "run_config"
)

// bqTable describes one table the sink creates.
type bqTable struct {
	name       string
	schema     bigquery.Schema
	partition  string // TIMESTAMP column partitioned by day, or ""
	clustering []string
}

func req(name string, t bigquery.FieldType) *bigquery.FieldSchema {
	return &bigquery.FieldSchema{Name: name, Type: t, Required: true}
}

// snapshotSchema is the changelog's: SPEC §5's hourly_revenue columns, with
// revenue both as an exact NUMERIC (nine fractional digits, so micros are
// exact) and as integer micros, plus written_at and writer.
var snapshotSchema = bigquery.Schema{
	req("window_start", bigquery.TimestampFieldType),
	req("window_end", bigquery.TimestampFieldType),
	req("dims", bigquery.StringFieldType),
	req("revenue", bigquery.NumericFieldType),
	req("revenue_micros", bigquery.IntegerFieldType),
	req("event_count", bigquery.IntegerFieldType),
	req("revision", bigquery.IntegerFieldType),
	req("result_state", bigquery.StringFieldType),
	req("written_at", bigquery.TimestampFieldType),
	req("writer", bigquery.StringFieldType),
}

var bqTables = []bqTable{
	{name: bqChangelog, schema: snapshotSchema, partition: "window_start", clustering: []string{"window_start", "dims"}},
	{name: bqTooLate, partition: "event_time", clustering: []string{"source_position"}, schema: bigquery.Schema{
		req("source_position", bigquery.StringFieldType),
		req("event_id", bigquery.StringFieldType),
		req("event_time", bigquery.TimestampFieldType),
		req("payload", bigquery.StringFieldType),
		req("reason", bigquery.StringFieldType),
	}},
	{name: bqConflicts, clustering: []string{"source_position"}, schema: bigquery.Schema{
		req("source_position", bigquery.StringFieldType),
		req("event_id", bigquery.StringFieldType),
		req("first_fingerprint", bigquery.StringFieldType),
		req("conflicting_fingerprint", bigquery.StringFieldType),
		req("payload", bigquery.StringFieldType),
	}},
	{name: bqQuarantined, clustering: []string{"source_position"}, schema: bigquery.Schema{
		req("source_position", bigquery.StringFieldType),
		req("payload", bigquery.StringFieldType),
		req("reason", bigquery.StringFieldType),
	}},
	{name: bqDiffs, partition: "window_start", clustering: []string{"run_id", "dims"}, schema: bigquery.Schema{
		req("run_id", bigquery.StringFieldType),
		req("window_start", bigquery.TimestampFieldType),
		req("dims", bigquery.StringFieldType),
		req("streamed_revenue_micros", bigquery.IntegerFieldType),
		req("recomputed_revenue_micros", bigquery.IntegerFieldType),
		req("delta_micros", bigquery.IntegerFieldType),
		req("streamed_count", bigquery.IntegerFieldType),
		req("recomputed_count", bigquery.IntegerFieldType),
		req("classification", bigquery.StringFieldType),
		{Name: "applied_revision", Type: bigquery.IntegerFieldType},
	}},
	{name: bqRunConfig, schema: bigquery.Schema{
		req("key", bigquery.StringFieldType),
		req("value", bigquery.StringFieldType),
	}},
}

// schemaOf returns a created table's schema.
func schemaOf(table string) bigquery.Schema {
	for _, t := range bqTables {
		if t.name == table {
			return t.schema
		}
	}
	panic("sinks: no BigQuery table " + table)
}

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
		fields = append(fields, f.Name+" "+sqlType(f))
	}
	return "UNNEST(CAST(@rows AS ARRAY<STRUCT<" + strings.Join(fields, ", ") + ">>))"
}

// currentViewSQL keeps the highest revision of every key: the hourly_revenue
// table of SPEC §5, as a view over the changelog. It returns one row per key
// however often a row was appended (copies of one (key, revision) are the
// same row), and picks deterministically between different rows stored
// under one revision (see revisionOrder).
func (b *BigQuery) currentViewSQL() string {
	return `SELECT window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, writer
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
		if err := ds.Create(ctx, &bigquery.DatasetMetadata{}); err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("create dataset %s: %w", b.dataset, err)
		}
	}
	for _, t := range bqTables {
		md := &bigquery.TableMetadata{Schema: t.schema}
		if t.partition != "" {
			md.TimePartitioning = &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: t.partition}
		}
		if len(t.clustering) > 0 {
			md.Clustering = &bigquery.Clustering{Fields: t.clustering}
		}
		if err := b.createIfMissing(ctx, t.name, md); err != nil {
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
	if err := t.Create(ctx, md); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	return nil
}
