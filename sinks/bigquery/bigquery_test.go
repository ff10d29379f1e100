package bigquery

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	gbq "cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// These tests run against github.com/goccy/bigquery-emulator, a real
// BigQuery API server (see testing/bqtest): every statement the sink sends is
// parsed and executed by its ZetaSQL engine.

func openTestBigQuery(t *testing.T) *BigQuery {
	t.Helper()
	bqtest.Start(t)
	s, err := Open(context.Background(), sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "revenue"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// bqScalar runs a query returning one INT64 column named n.
func bqScalar(t *testing.T, s *BigQuery, sql string) int64 {
	t.Helper()
	it, err := s.client.Query(sql).Read(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var r struct {
		N int64 `bigquery:"n"`
	}
	if err := it.Next(&r); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return r.N
}

// duplicateKeys counts (window_start, dims, revision) keys stored more than
// once: the one thing a retried write must never cause.
func duplicateKeys(t *testing.T, s *BigQuery) int64 {
	return bqScalar(t, s, `SELECT COUNT(*) AS n FROM (SELECT window_start, dims, revision FROM `+s.table(table.HourlyRevenueChangelog.Name)+`
GROUP BY window_start, dims, revision HAVING COUNT(*) > 1)`)
}

func TestBigQueryConformance(t *testing.T) {
	sinktest.Conformance(t, func(t *testing.T) sinktest.Under {
		s := openTestBigQuery(t)
		return sinktest.Under{S: s, Name: s.String(), Count: func(t *testing.T, tbl string) int64 {
			return bqScalar(t, s, "SELECT COUNT(*) AS n FROM "+s.table(tbl))
		}}
	}, sinktest.GuardRules...)
}

func TestBigQuerySchema(t *testing.T) {
	s := openTestBigQuery(t)
	ctx := context.Background()
	ds := s.client.Dataset("revenue")
	want := map[string][]string{
		table.HourlyRevenueChangelog.Name: {"window_start", "window_end", "dims", "revenue", "revenue_micros", "event_count",
			"revision", "result_state", "written_at", "writer"},
		table.TooLateEvents.Name:     {"source_position", "event_id", "event_time", "payload", "reason"},
		table.ConflictEvents.Name:    {"source_position", "event_id", "first_fingerprint", "conflicting_fingerprint", "payload"},
		table.QuarantinedEvents.Name: {"source_position", "payload", "reason"},
		table.ReconcileDiffs.Name: {"run_id", "window_start", "dims", "streamed_revenue_micros", "recomputed_revenue_micros",
			"delta_micros", "streamed_count", "recomputed_count", "classification", "applied_revision"},
		table.RunConfig.Name:         {"key", "value"},
		table.SourceCheckpoints.Name: {"partition", "file", "offset", "line", "max_valid", "run", "updated_at"},
		table.SourceResume.Name:      {"partition", "file", "offset", "line", "max_valid", "run", "sealed_at"},
	}
	for tbl, cols := range want {
		md, err := ds.Table(tbl).Metadata(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		var got []string
		for _, f := range md.Schema {
			got = append(got, f.Name)
		}
		if !reflect.DeepEqual(got, cols) {
			t.Errorf("%s columns = %v, want %v", tbl, got, cols)
		}
	}
	md, err := ds.Table(table.HourlyRevenueChangelog.Name).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.TimePartitioning == nil || md.TimePartitioning.Field != "window_start" || md.TimePartitioning.Type != gbq.DayPartitioningType {
		t.Errorf("changelog partitioning = %+v, want DAY on window_start", md.TimePartitioning)
	}
	if md.Clustering == nil || !reflect.DeepEqual(md.Clustering.Fields, []string{"window_start", "dims"}) {
		t.Errorf("changelog clustering = %+v, want [window_start dims]", md.Clustering)
	}
	md, err = ds.Table(table.SourceCheckpoints.Name).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Clustering == nil || !reflect.DeepEqual(md.Clustering.Fields, []string{"run"}) {
		t.Errorf("source_checkpoints clustering = %+v, want [run]", md.Clustering)
	}
	view, err := ds.Table(table.HourlyRevenue.Name).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if view.ViewQuery != s.currentViewSQL() {
		t.Errorf("hourly_revenue view = %q", view.ViewQuery)
	}
	// Opening again finds everything in place.
	again, err := Open(ctx, sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "revenue"})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	again.Close()
}

func TestBigQueryStoredFormats(t *testing.T) {
	s := openTestBigQuery(t)
	sinktest.WantResult(t, sinktest.Write(t, s, sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", `{"country":"DE"}`, 1, model.OnTime, 2, 137_500_001),
	}}), sink.Result{Accepted: 1})
	it, err := s.client.Query(`SELECT CAST(revenue AS STRING) AS revenue, revenue_micros, writer, written_at FROM ` +
		s.table(table.HourlyRevenueChangelog.Name)).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Revenue       string    `bigquery:"revenue"`
		RevenueMicros int64     `bigquery:"revenue_micros"`
		Writer        string    `bigquery:"writer"`
		WrittenAt     time.Time `bigquery:"written_at"`
	}
	if err := it.Next(&r); err != nil {
		t.Fatal(err)
	}
	// NUMERIC holds the exact amount: no float on the way in or out.
	if r.Revenue != "137.500001" || r.RevenueMicros != 137_500_001 || r.Writer != "stream" {
		t.Errorf("stored = %+v, want revenue 137.500001, micros 137500001, writer stream", r)
	}
	if age := time.Since(r.WrittenAt); age < 0 || age > time.Minute {
		t.Errorf("written_at = %v, not the write time", r.WrittenAt)
	}
	if err := it.Next(&r); err != iterator.Done {
		t.Errorf("more than one row: %v", err)
	}
}

// TestBigQueryRetriedStatement replays the changelog MERGE of a batch whose
// first attempt did land (the case of a timeout after the server committed):
// the second attempt inserts nothing.
func TestBigQueryRetriedStatement(t *testing.T) {
	s := openTestBigQuery(t)
	rows := []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
		sinktest.Snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.OnTime, 1, 20_000_000),
	}
	ctx := context.Background()
	// Two writers that both read "nothing stored" before either wrote: both
	// pass the admission rule in Go, and only the MERGE stands between them
	// and a second copy of each row.
	acc1, stale1, err := s.writeRows(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	if acc1 != 2 || stale1 != 0 {
		t.Fatalf("first = %d accepted, %d stale; want 2, 0", acc1, stale1)
	}
	var params []sink.ChangelogEntry
	for _, r := range rows {
		params = append(params, sink.ChangelogEntry{Row: r, WrittenAt: time.Now()})
	}
	n, err := insertMissing(ctx, s, table.ChangelogCodec, []string{"window_start", "dims"}, "revision", params)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the retried insert added %d rows, want 0", n)
	}
	if d := duplicateKeys(t, s); d != 0 {
		t.Fatalf("%d (window_start, dims, revision) keys stored twice", d)
	}
}

func TestBigQueryConcurrentWriters(t *testing.T) {
	s := openTestBigQuery(t)
	const writers, batches = 2, 8
	sinktest.WriteConcurrently(t, writers, batches, func(int) sink.Sink { return s })
	if got, want := int64(len(sinktest.CurrentOf(t, s))), int64(writers*batches*5+1); got != want {
		t.Errorf("hourly_revenue has %d keys, want %d", got, want)
	}
	for name, want := range map[string]int64{table.TooLateEvents.Name: writers * batches, table.QuarantinedEvents.Name: writers * batches} {
		if got := bqScalar(t, s, "SELECT COUNT(*) AS n FROM "+s.table(name)); got != want {
			t.Errorf("%s has %d rows, want %d", name, got, want)
		}
	}
	if d := duplicateKeys(t, s); d != 0 {
		t.Errorf("%d (window_start, dims, revision) keys stored twice", d)
	}
	shared := bqScalar(t, s, `SELECT revision AS n FROM `+s.table(table.HourlyRevenue.Name)+` WHERE dims = '{"shared":true}'`)
	if want := int64((batches-1)*2 + (writers - 1) + 1); shared != want {
		t.Errorf("shared key revision = %d, want %d", shared, want)
	}
}

// The query parameters are cast to the tables' row types by position, so
// each parameter's struct fields must be its table's columns, in order, of
// the columns' types.
func TestBigQueryParamStructsMatchSchemas(t *testing.T) {
	for _, tc := range []struct {
		tbl   string
		param *gbq.QueryParameterValue
	}{
		{table.HourlyRevenueChangelog.Name, bqRowsParam(table.ChangelogCodec, []sink.ChangelogEntry{{Row: model.Row{State: model.Final}}})},
		{table.TooLateEvents.Name, bqRowsParam(table.TooLateCodec, []model.TooLate{{}})},
		{table.ConflictEvents.Name, bqRowsParam(table.ConflictCodec, []model.Conflict{{}})},
		{table.QuarantinedEvents.Name, bqRowsParam(table.QuarantinedCodec, []model.Quarantined{{}})},
		{table.ReconcileDiffs.Name, bqRowsParam(table.DiffCodec, []sink.Diff{{}})},
		{table.RunConfig.Name, bqRowsParam(table.ConfigCodec, []table.ConfigEntry{{}})},
	} {
		var fields, cols []string
		for _, f := range tc.param.Type.ArrayElementType.StructType.Fields {
			fields = append(fields, f.Name+" "+f.Type.TypeKind)
		}
		for _, c := range tableOf(tc.tbl).Columns {
			cols = append(cols, c.Name+" "+bqTypes[c.Type].sql)
		}
		if !reflect.DeepEqual(fields, cols) {
			t.Errorf("%s: parameter fields %v, columns %v", tc.tbl, fields, cols)
		}
		if got := len(tc.param.ArrayValue[0].StructValue); got != len(cols) {
			t.Errorf("%s: a row carries %d values for %d columns", tc.tbl, got, len(cols))
		}
	}
}

// Transient failures are retried up to bqAttempts times; others, and a read
// that already handed rows over, are not.
func TestBigQueryRetryPolicy(t *testing.T) {
	b := &BigQuery{project: "p", dataset: "d", sleep: func(context.Context, time.Duration) error { return nil }}
	for _, tc := range []struct {
		name  string
		err   error
		tries int
	}{
		{"backend error", &googleapi.Error{Code: 503}, bqAttempts},
		{"concurrent DML", errors.New("Could not serialize access to table due to concurrent update"), bqAttempts},
		{"bad query", &googleapi.Error{Code: 400}, 1},
		{"read after rows", fmt.Errorf("%w: %w", errPartialRead, &googleapi.Error{Code: 503}), 1},
	} {
		tries := 0
		err := b.retry(context.Background(), tc.name, func() error { tries++; return tc.err })
		if err == nil || tries != tc.tries {
			t.Errorf("%s: %d tries, err %v; want %d tries and an error", tc.name, tries, err, tc.tries)
		}
	}
	tries := 0
	if err := b.retry(context.Background(), "flaky", func() error {
		if tries++; tries < 3 {
			return &googleapi.Error{Code: 429}
		}
		return nil
	}); err != nil || tries != 3 {
		t.Errorf("flaky: %d tries, err %v; want success on the 3rd", tries, err)
	}
}
