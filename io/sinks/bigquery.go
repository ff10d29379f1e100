package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/revenue-stream/hourly/model"
)

// EmulatorHostEnv names the variable that points the BigQuery sink at a
// local BigQuery API server (host:port, plain HTTP, no credentials), the way
// PUBSUB_EMULATOR_HOST does for Pub/Sub. The tests use it with
// github.com/goccy/bigquery-emulator.
const EmulatorHostEnv = "BIGQUERY_EMULATOR_HOST"

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

const (
	// bqChunk bounds the rows of one MERGE: its parameters travel in the
	// query request, which BigQuery caps (10 MB); 500 audit rows with 64 KiB
	// payloads stay well inside it.
	bqChunk = 500
	// bqAttempts bounds retries of a statement that failed transiently
	// (rate limits, backend errors, concurrent DML on the same table). Every
	// statement is a MERGE keyed on its table's key, so a retry after an
	// unknown outcome adds nothing twice.
	bqAttempts = 6
)

// BigQuery is the production sink (SPEC §5 on BigQuery). Its source of truth
// is an append-only changelog, partitioned by day of window_start and
// clustered by the key, holding one row per (window_start, dims, revision);
// the current snapshot is a view that keeps the highest revision per key.
// Every write is a MERGE whose ON clause is the table's key, so a retried
// batch, a replayed bundle or a second writer never leaves two rows for one
// key: Inserter().Put (streaming inserts) is best effort and is not used.
//
// A changelog row is only inserted when no stored row of its key has the same
// or a higher revision (checked inside the MERGE, so it holds against
// concurrent writers), and when SPEC §4's rules accept it against the current
// row read just before (state never goes back, a stream row never lowers the
// count). Audit rows are keyed by source_position, reconcile_diffs by
// (run_id, window_start, dims), run_config by key.
//
// Source progress is not stored: BigQuery has no transaction that spans the
// rows and a progress table, so a restart replays its source (the revision
// rules make the replay harmless), as it does with the jsonl sink.
type BigQuery struct {
	client           *bigquery.Client
	project, dataset string
	// sleep waits between retries; tests shorten it.
	sleep func(context.Context, time.Duration) error
	// dmlStats is whether the server reports the rows a DML statement
	// changed (probed at open; BigQuery does, the emulator does not).
	dmlStats bool
}

var _ Sink = (*BigQuery)(nil)
var _ ConfigChecker = (*BigQuery)(nil)

// OpenBigQuery connects to the dataset a bigquery: spec names, creating the
// dataset, tables and view that are missing. Credentials are Application
// Default Credentials; with BIGQUERY_EMULATOR_HOST set it talks plain HTTP to
// that host without credentials.
func OpenBigQuery(ctx context.Context, spec Spec) (*BigQuery, error) {
	if spec.Scheme != SchemeBigQuery {
		return nil, fmt.Errorf("sink %s: not a bigquery spec", spec)
	}
	var opts []option.ClientOption
	if host := os.Getenv(EmulatorHostEnv); host != "" {
		opts = append(opts, option.WithEndpoint("http://"+host), option.WithoutAuthentication())
	}
	client, err := bigquery.NewClient(ctx, spec.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	b := &BigQuery{client: client, project: spec.Project, dataset: spec.Dataset, sleep: sleepCtx}
	if err := b.ensureSchema(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	return b, nil
}

func (b *BigQuery) String() string { return SchemeBigQuery + ":" + b.project + "." + b.dataset }

// Close releases the client.
func (b *BigQuery) Close() error { return b.client.Close() }

// table renders a fully qualified, backquoted table reference. name is one of
// the constants above; project and dataset passed ParseSpec's patterns, which
// admit no backquote.
func (b *BigQuery) table(name string) string {
	return "`" + b.project + "." + b.dataset + "." + name + "`"
}

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
// table of SPEC §5, as a view over the changelog.
func (b *BigQuery) currentViewSQL() string {
	return `SELECT window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, writer
FROM ` + b.table(bqChangelog) + `
WHERE TRUE
QUALIFY ROW_NUMBER() OVER (PARTITION BY window_start, dims ORDER BY revision DESC) = 1`
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

func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

func isNotFound(err error) bool      { return httpCode(err) == http.StatusNotFound }
func isAlreadyExists(err error) bool { return httpCode(err) == http.StatusConflict }

// transient reports whether a failed statement may succeed when retried:
// rate limits, backend errors, and BigQuery's "could not serialize access to
// table ... due to concurrent update" when two writers' DML overlap.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errPartialRead) {
		return false
	}
	switch httpCode(err) {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	msg := err.Error()
	for _, s := range []string{"rateLimitExceeded", "backendError", "concurrent update", "internalError", "jobBackendError"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs try until it succeeds, fails for good, or bqAttempts tries
// failed transiently, backing off between tries.
func (b *BigQuery) retry(ctx context.Context, what string, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil {
			return nil
		}
		if attempt == bqAttempts || !transient(err) {
			return fmt.Errorf("bigquery sink %s: %s: %w", b, what, err)
		}
		slog.Debug("bigquery sink: retrying", "what", what, "attempt", attempt, "err", err)
		if serr := b.sleep(ctx, time.Duration(attempt*attempt)*200*time.Millisecond); serr != nil {
			return fmt.Errorf("bigquery sink %s: %s: %w (after %v)", b, what, serr, err)
		}
	}
}

// exec runs one DML statement, retrying transient failures, and returns the
// rows it inserted, changed or deleted; known is false when the server did
// not say (BigQuery always does; the emulator never does).
func (b *BigQuery) exec(ctx context.Context, what, sql string, params ...bigquery.QueryParameter) (n int64, known bool, err error) {
	err = b.retry(ctx, what, func() (err error) {
		n, known, err = b.execOnce(ctx, sql, params)
		return err
	})
	return n, known, err
}

func (b *BigQuery) execOnce(ctx context.Context, sql string, params []bigquery.QueryParameter) (int64, bool, error) {
	q := b.client.Query(sql)
	q.Parameters = params
	job, err := q.Run(ctx)
	if err != nil {
		return 0, false, err
	}
	status, err := job.Wait(ctx)
	if err != nil {
		return 0, false, err
	}
	if err := status.Err(); err != nil {
		return 0, false, err
	}
	if st, ok := status.Statistics.Details.(*bigquery.QueryStatistics); ok && st.DMLStats != nil {
		return st.NumDMLAffectedRows, true, nil
	}
	return 0, false, nil
}

// read runs a query and calls next for each row (next reads one row with
// it.Next and returns its error). A transient failure is retried only while
// no row has been handed to next: the callers accumulate rows, and a retry
// after some would hand them over twice.
func (b *BigQuery) read(ctx context.Context, what, sql string, params []bigquery.QueryParameter, next func(*bigquery.RowIterator) error) error {
	delivered := false
	return b.retry(ctx, what, func() error {
		q := b.client.Query(sql)
		q.Parameters = params
		it, err := q.Read(ctx)
		if err != nil {
			return err
		}
		for {
			err := next(it)
			if errors.Is(err, iterator.Done) {
				return nil
			}
			if err != nil {
				if delivered {
					return fmt.Errorf("%w: %w", errPartialRead, err)
				}
				return err
			}
			delivered = true
		}
	})
}

// errPartialRead marks a read that failed after rows were delivered: it is
// not retried (transient reports false for it).
var errPartialRead = errors.New("read failed after delivering rows")

// bqSnapshot is a changelog row as a query parameter and as a result row.
type bqSnapshot struct {
	WindowStart   time.Time `bigquery:"window_start"`
	WindowEnd     time.Time `bigquery:"window_end"`
	Dims          string    `bigquery:"dims"`
	Revenue       *big.Rat  `bigquery:"revenue"`
	RevenueMicros int64     `bigquery:"revenue_micros"`
	EventCount    int64     `bigquery:"event_count"`
	Revision      int64     `bigquery:"revision"`
	ResultState   string    `bigquery:"result_state"`
	WrittenAt     time.Time `bigquery:"written_at"`
	Writer        string    `bigquery:"writer"`
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ratMicros is an exact NUMERIC value for an amount in micros.
func ratMicros(m int64) *big.Rat { return big.NewRat(m, 1_000_000) }

func (s bqSnapshot) row() (model.Row, error) {
	st, err := model.ParseResultState(s.ResultState)
	if err != nil {
		return model.Row{}, fmt.Errorf("%s %s revision %d: %w", s.WindowStart.UTC().Format(time.RFC3339), s.Dims, s.Revision, err)
	}
	return model.Row{WindowStart: s.WindowStart.UnixMilli(), WindowEnd: s.WindowEnd.UnixMilli(), Dims: s.Dims,
		RevenueMicros: s.RevenueMicros, EventCount: s.EventCount, Revision: s.Revision, State: st, Writer: s.Writer}, nil
}

const snapshotColumns = "window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, written_at, writer"

// Write applies a batch: snapshot rows through SPEC §4's revision rules into
// the changelog, audit rows once per source_position. Each table is one
// MERGE per chunk of rows; BigQuery has no transaction across them, so a
// batch interrupted halfway is completed by its retry (every MERGE is
// idempotent) rather than rolled back.
func (b *BigQuery) Write(ctx context.Context, batch Batch) (Result, error) {
	if err := validateBatch(batch); err != nil {
		return Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
	}
	var res Result
	if len(batch.Rows) > 0 {
		accepted, stale, err := b.writeRows(ctx, batch.Rows)
		if err != nil {
			return Result{}, err
		}
		res.Accepted, res.Stale = accepted, stale
	}
	n, err := b.writeAudit(ctx, batch)
	if err != nil {
		return Result{}, err
	}
	res.AuditInserted = n
	return res, nil
}

// currentOf reads the stored current row of each key in keys.
func (b *BigQuery) currentOf(ctx context.Context, keys map[rowKey]bool) (map[rowKey]stored, error) {
	starts := map[int64]bool{}
	for k := range keys {
		starts[k.windowStart] = true
	}
	param := make([]time.Time, 0, len(starts))
	for ms := range starts {
		param = append(param, msTime(ms))
	}
	out := make(map[rowKey]stored, len(keys))
	sql := `SELECT window_start, dims, revision, result_state, event_count FROM ` + b.table(bqChangelog) + `
WHERE window_start IN UNNEST(CAST(@starts AS ARRAY<TIMESTAMP>))
QUALIFY ROW_NUMBER() OVER (PARTITION BY window_start, dims ORDER BY revision DESC) = 1`
	err := b.read(ctx, "read current rows", sql, []bigquery.QueryParameter{{Name: "starts", Value: param}},
		func(it *bigquery.RowIterator) error {
			var r struct {
				WindowStart time.Time `bigquery:"window_start"`
				Dims        string    `bigquery:"dims"`
				Revision    int64     `bigquery:"revision"`
				ResultState string    `bigquery:"result_state"`
				EventCount  int64     `bigquery:"event_count"`
			}
			if err := it.Next(&r); err != nil {
				return err
			}
			k := rowKey{r.WindowStart.UnixMilli(), r.Dims}
			if !keys[k] {
				return nil
			}
			st, err := model.ParseResultState(r.ResultState)
			if err != nil {
				return err
			}
			out[k] = stored{revision: r.Revision, state: st, count: r.EventCount}
			return nil
		})
	return out, err
}

// insertMissingSQL inserts the @rows of table that no stored row matches
// on the key columns (and, with newer, no stored row whose newer column is
// at least the row's: a higher revision). It is one DML statement, so the
// check and the insert see one snapshot of the table: a retried statement
// whose first attempt did land inserts nothing, and a row whose key a
// concurrent writer stored first becomes a no-op. It is what a MERGE with
// only a WHEN NOT MATCHED clause does, written as an INSERT because the
// emulator the tests run against handles a MERGE only from a table, on one
// equality.
func (b *BigQuery) insertMissingSQL(table string, key []string, newer string) string {
	var cols, sel, match []string
	for _, f := range schemaOf(table) {
		cols = append(cols, f.Name)
		if !f.Required {
			// A NULL inside an array-of-struct parameter reaches the
			// emulator as 0; the optional columns (only applied_revision, a
			// revision, so never 0) travel as 0 for NULL.
			sel = append(sel, "NULLIF(s."+f.Name+", 0)")
			continue
		}
		sel = append(sel, "s."+f.Name)
	}
	for _, k := range key {
		match = append(match, "c."+k+" = s."+k)
	}
	if newer != "" {
		match = append(match, "c."+newer+" >= s."+newer)
	}
	return `INSERT INTO ` + b.table(table) + ` (` + strings.Join(cols, ", ") + `)
SELECT ` + strings.Join(sel, ", ") + ` FROM ` + unnestRows(table) + ` AS s
WHERE NOT EXISTS (SELECT 1 FROM ` + b.table(table) + ` AS c WHERE ` + strings.Join(match, " AND ") + `)`
}

// insertMissing inserts the rows of table that insertMissingSQL admits, one
// statement per chunk, and returns how many it inserted: from the DML
// statistics, or, on a server that keeps them to itself (the emulator), by
// counting the chunk's keys around the statement.
func insertMissing[T any](ctx context.Context, b *BigQuery, table string, key []string, newer string, rows []T) (int, error) {
	sql := b.insertMissingSQL(table, key, newer)
	total := 0
	for lo := 0; lo < len(rows); lo += bqChunk {
		chunk := bigquery.QueryParameter{Name: "rows", Value: rows[lo:min(lo+bqChunk, len(rows))]}
		var before int64
		if !b.dmlStats {
			var err error
			if before, err = b.countKeys(ctx, table, key, chunk); err != nil {
				return total, err
			}
		}
		n, known, err := b.exec(ctx, "insert "+table, sql, chunk)
		if err != nil {
			return total, err
		}
		if !known {
			after, err := b.countKeys(ctx, table, key, chunk)
			if err != nil {
				return total, err
			}
			n = after - before
		}
		total += int(n)
	}
	return total, nil
}

// countKeys counts the stored rows whose key is one of the rows'.
func (b *BigQuery) countKeys(ctx context.Context, table string, key []string, rows bigquery.QueryParameter) (int64, error) {
	var match []string
	for _, k := range key {
		match = append(match, "s."+k+" = c."+k)
	}
	var n int64
	err := b.read(ctx, "count "+table, `SELECT COUNT(*) AS n FROM `+b.table(table)+` AS c
WHERE EXISTS (SELECT 1 FROM `+unnestRows(table)+` AS s WHERE `+strings.Join(match, " AND ")+`)`,
		[]bigquery.QueryParameter{rows}, func(it *bigquery.RowIterator) error {
			var r struct {
				N int64 `bigquery:"n"`
			}
			if err := it.Next(&r); err != nil {
				return err
			}
			n = r.N
			return nil
		})
	return n, err
}

func (b *BigQuery) writeRows(ctx context.Context, rows []model.Row) (accepted, stale int, err error) {
	rows = sortedRows(rows)
	keys := make(map[rowKey]bool)
	for _, r := range rows {
		keys[rowKey{r.WindowStart, r.Dims}] = true
	}
	current, err := b.currentOf(ctx, keys)
	if err != nil {
		return 0, 0, err
	}
	now := time.Now().UTC()
	var (
		admitted    []bqSnapshot
		regressions int
		example     string
	)
	for _, r := range rows {
		k := rowKey{r.WindowStart, r.Dims}
		prev, have := current[k]
		switch admit(prev, have, r) {
		case staleRevision:
			stale++
			continue
		case regression:
			stale++
			regressions++
			if example == "" {
				example = fmt.Sprintf("%s revision %d %v count %d over revision %d %v count %d",
					r.Key(), r.Revision, r.State, r.EventCount, prev.revision, prev.state, prev.count)
			}
			continue
		}
		current[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
		admitted = append(admitted, bqSnapshot{WindowStart: msTime(r.WindowStart), WindowEnd: msTime(r.WindowEnd),
			Dims: r.Dims, Revenue: ratMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros,
			EventCount: r.EventCount, Revision: r.Revision, ResultState: r.State.String(), WrittenAt: now, Writer: writerOf(r)})
	}
	if regressions > 0 {
		slog.Warn("bigquery sink: rejected rows that would lower a count or move a state back",
			"sink", b.String(), "rows", regressions, "example", example)
	}
	n, err := insertMissing(ctx, b, bqChangelog, []string{"window_start", "dims"}, "revision", admitted)
	if err != nil {
		return 0, 0, err
	}
	// A row another writer stored between the read and the insert is stale.
	accepted, stale = n, stale+len(admitted)-n
	return accepted, stale, nil
}

// bq audit rows as query parameters.
type (
	bqTooLateRow struct {
		SourcePosition string    `bigquery:"source_position"`
		EventID        string    `bigquery:"event_id"`
		EventTime      time.Time `bigquery:"event_time"`
		Payload        string    `bigquery:"payload"`
		Reason         string    `bigquery:"reason"`
	}
	bqConflictRow struct {
		SourcePosition         string `bigquery:"source_position"`
		EventID                string `bigquery:"event_id"`
		FirstFingerprint       string `bigquery:"first_fingerprint"`
		ConflictingFingerprint string `bigquery:"conflicting_fingerprint"`
		Payload                string `bigquery:"payload"`
	}
	bqQuarantinedRow struct {
		SourcePosition string `bigquery:"source_position"`
		Payload        string `bigquery:"payload"`
		Reason         string `bigquery:"reason"`
	}
)

// uniqueBy keeps the first element of each key: MERGE inserts every
// unmatched source row, so copies of a position within one batch are removed
// before it.
func uniqueBy[T any](in []T, key func(T) string) []T {
	seen := make(map[string]bool, len(in))
	out := make([]T, 0, len(in))
	for _, v := range in {
		if k := key(v); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// insertAudit inserts the rows of one audit table whose source_position is
// not stored yet and returns how many it inserted.
func insertAudit[T any](ctx context.Context, b *BigQuery, table string, rows []T) (int, error) {
	return insertMissing(ctx, b, table, []string{"source_position"}, "", rows)
}

func (b *BigQuery) writeAudit(ctx context.Context, batch Batch) (int, error) {
	total := 0
	if len(batch.TooLate) > 0 {
		rows := make([]bqTooLateRow, 0, len(batch.TooLate))
		for _, t := range batch.TooLate {
			rows = append(rows, bqTooLateRow{t.Position, t.EventID, msTime(t.EventTime), string(t.Payload), tooLateReason(t)})
		}
		rows = uniqueBy(rows, func(r bqTooLateRow) string { return r.SourcePosition })
		n, err := insertAudit(ctx, b, bqTooLate, rows)
		if err != nil {
			return 0, err
		}
		total += n
	}
	if len(batch.Conflicts) > 0 {
		rows := make([]bqConflictRow, 0, len(batch.Conflicts))
		for _, c := range batch.Conflicts {
			rows = append(rows, bqConflictRow{c.Position, c.EventID, model.FingerprintHex(c.FirstFingerprint),
				model.FingerprintHex(c.ConflictingFingerprint), string(c.Payload)})
		}
		rows = uniqueBy(rows, func(r bqConflictRow) string { return r.SourcePosition })
		n, err := insertAudit(ctx, b, bqConflicts, rows)
		if err != nil {
			return 0, err
		}
		total += n
	}
	if len(batch.Quarantined) > 0 {
		rows := make([]bqQuarantinedRow, 0, len(batch.Quarantined))
		for _, q := range batch.Quarantined {
			rows = append(rows, bqQuarantinedRow{q.Position, string(q.Payload), q.Reason})
		}
		rows = uniqueBy(rows, func(r bqQuarantinedRow) string { return r.SourcePosition })
		n, err := insertAudit(ctx, b, bqQuarantined, rows)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// CheckRunConfig refuses a run whose settings differ from the stored ones and
// stores the keys not stored yet (see SQLite.CheckRunConfig).
func (b *BigQuery) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	have, err := b.RunConfig(ctx)
	if err != nil {
		return err
	}
	added, err := compareRunConfig(b.String(), have, cfg)
	if err != nil {
		return err
	}
	if len(added) == 0 {
		return nil
	}
	type kv struct {
		Key   string `bigquery:"key"`
		Value string `bigquery:"value"`
	}
	rows := make([]kv, 0, len(added))
	for _, k := range added {
		rows = append(rows, kv{k, cfg[k]})
	}
	_, err = insertMissing(ctx, b, bqRunConfig, []string{"key"}, "", rows)
	if err != nil {
		return err
	}
	// Two runs starting at once could both have added a key: read back, and
	// refuse if the stored value is not ours.
	have, err = b.RunConfig(ctx)
	if err != nil {
		return err
	}
	_, err = compareRunConfig(b.String(), have, cfg)
	return err
}

// RunConfig returns the stored run settings.
func (b *BigQuery) RunConfig(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := b.read(ctx, "read "+bqRunConfig, `SELECT key, value FROM `+b.table(bqRunConfig), nil,
		func(it *bigquery.RowIterator) error {
			var r struct {
				Key   string `bigquery:"key"`
				Value string `bigquery:"value"`
			}
			if err := it.Next(&r); err != nil {
				return err
			}
			out[r.Key] = r.Value
			return nil
		})
	return out, err
}

func (b *BigQuery) readSnapshots(ctx context.Context, what, sql string) ([]model.Row, error) {
	var out []model.Row
	err := b.read(ctx, what, sql, nil, func(it *bigquery.RowIterator) error {
		var s bqSnapshot
		if err := it.Next(&s); err != nil {
			return err
		}
		r, err := s.row()
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedRows(out), nil
}

// CurrentRows returns the current snapshot of every key (the hourly_revenue
// view), ordered by window_start then dims.
func (b *BigQuery) CurrentRows(ctx context.Context) ([]model.Row, error) {
	return b.readSnapshots(ctx, "read "+bqCurrent, `SELECT window_start, window_end, dims, revenue, revenue_micros,
event_count, revision, result_state, writer FROM `+b.table(bqCurrent))
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (b *BigQuery) Changelog(ctx context.Context) ([]model.Row, error) {
	return b.readSnapshots(ctx, "read "+bqChangelog, `SELECT `+snapshotColumns+` FROM `+b.table(bqChangelog))
}

// FinalHorizon returns the latest window_end among FINAL rows (see
// SQLite.FinalHorizon).
func (b *BigQuery) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	err = b.read(ctx, "read final horizon", `SELECT MAX(window_end) AS horizon FROM `+b.table(bqCurrent)+`
WHERE result_state = 'FINAL'`, nil, func(it *bigquery.RowIterator) error {
		var r struct {
			Horizon bigquery.NullTimestamp `bigquery:"horizon"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		if r.Horizon.Valid {
			windowEndMs, ok = r.Horizon.Timestamp.UnixMilli(), true
		}
		return nil
	})
	return windowEndMs, ok, err
}

// TooLate returns the too_late_events rows ordered by source_position.
func (b *BigQuery) TooLate(ctx context.Context) ([]model.TooLate, error) {
	var out []model.TooLate
	err := b.read(ctx, "read "+bqTooLate, `SELECT source_position, event_id, event_time, payload, reason FROM `+
		b.table(bqTooLate)+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqTooLateRow
		if err := it.Next(&r); err != nil {
			return err
		}
		out = append(out, model.TooLate{Position: r.SourcePosition, EventID: r.EventID, EventTime: r.EventTime.UnixMilli(),
			Payload: []byte(r.Payload), Reason: r.Reason})
		return nil
	})
	return out, err
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (b *BigQuery) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	var out []model.Conflict
	err := b.read(ctx, "read "+bqConflicts, `SELECT source_position, event_id, first_fingerprint, conflicting_fingerprint,
payload FROM `+b.table(bqConflicts)+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqConflictRow
		if err := it.Next(&r); err != nil {
			return err
		}
		first, err := strconv.ParseUint(r.FirstFingerprint, 16, 64)
		if err != nil {
			return fmt.Errorf("first_fingerprint %q: %w", r.FirstFingerprint, err)
		}
		confl, err := strconv.ParseUint(r.ConflictingFingerprint, 16, 64)
		if err != nil {
			return fmt.Errorf("conflicting_fingerprint %q: %w", r.ConflictingFingerprint, err)
		}
		out = append(out, model.Conflict{Position: r.SourcePosition, EventID: r.EventID, FirstFingerprint: first,
			ConflictingFingerprint: confl, Payload: []byte(r.Payload)})
		return nil
	})
	return out, err
}

// Quarantined returns the quarantined_events rows ordered by source_position.
func (b *BigQuery) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	var out []model.Quarantined
	err := b.read(ctx, "read "+bqQuarantined, `SELECT source_position, payload, reason FROM `+
		b.table(bqQuarantined)+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqQuarantinedRow
		if err := it.Next(&r); err != nil {
			return err
		}
		out = append(out, model.Quarantined{Position: r.SourcePosition, Payload: []byte(r.Payload), Reason: r.Reason})
		return nil
	})
	return out, err
}

// bqDiffParam is a reconcile_diffs row as a query parameter: AppliedRevision
// 0 is stored as NULL (see insertMissingSQL).
type bqDiffParam struct {
	RunID                   string    `bigquery:"run_id"`
	WindowStart             time.Time `bigquery:"window_start"`
	Dims                    string    `bigquery:"dims"`
	StreamedRevenueMicros   int64     `bigquery:"streamed_revenue_micros"`
	RecomputedRevenueMicros int64     `bigquery:"recomputed_revenue_micros"`
	DeltaMicros             int64     `bigquery:"delta_micros"`
	StreamedCount           int64     `bigquery:"streamed_count"`
	RecomputedCount         int64     `bigquery:"recomputed_count"`
	Classification          string    `bigquery:"classification"`
	AppliedRevision         int64     `bigquery:"applied_revision"`
}

// bqDiff is a reconcile_diffs row as read.
type bqDiff struct {
	RunID                   string             `bigquery:"run_id"`
	WindowStart             time.Time          `bigquery:"window_start"`
	Dims                    string             `bigquery:"dims"`
	StreamedRevenueMicros   int64              `bigquery:"streamed_revenue_micros"`
	RecomputedRevenueMicros int64              `bigquery:"recomputed_revenue_micros"`
	DeltaMicros             int64              `bigquery:"delta_micros"`
	StreamedCount           int64              `bigquery:"streamed_count"`
	RecomputedCount         int64              `bigquery:"recomputed_count"`
	Classification          string             `bigquery:"classification"`
	AppliedRevision         bigquery.NullInt64 `bigquery:"applied_revision"`
}

// WriteDiffs stores reconcile diffs, replacing a row with the same (run_id,
// window_start, dims) so a retried run stays idempotent.
func (b *BigQuery) WriteDiffs(ctx context.Context, diffs []Diff) error {
	if len(diffs) == 0 {
		return nil
	}
	rows := make([]bqDiffParam, 0, len(diffs))
	for _, d := range diffs {
		r := bqDiffParam{RunID: d.RunID, WindowStart: msTime(d.WindowStart), Dims: d.Dims,
			StreamedRevenueMicros: d.StreamedRevenueMicros, RecomputedRevenueMicros: d.RecomputedRevenueMicros,
			DeltaMicros: d.DeltaMicros, StreamedCount: d.StreamedCount, RecomputedCount: d.RecomputedCount,
			Classification: d.Classification}
		if d.AppliedRevision != nil {
			r.AppliedRevision = *d.AppliedRevision
		}
		rows = append(rows, r)
	}
	rows = uniqueBy(rows, func(r bqDiffParam) string {
		return r.RunID + "\x00" + strconv.FormatInt(r.WindowStart.UnixMilli(), 10) + "\x00" + r.Dims
	})
	// Replace, not insert: a run writes its diffs before --apply and again
	// with the applied revisions. Both statements are idempotent; a crash
	// between them leaves the run's rows missing until it is run again.
	key := []string{"run_id", "window_start", "dims"}
	var match []string
	for _, k := range key {
		match = append(match, "s."+k+" = t."+k)
	}
	del := `DELETE FROM ` + b.table(bqDiffs) + ` AS t
WHERE EXISTS (SELECT 1 FROM ` + unnestRows(bqDiffs) + ` AS s WHERE ` + strings.Join(match, " AND ") + `)`
	for lo := 0; lo < len(rows); lo += bqChunk {
		if _, _, err := b.exec(ctx, "replace "+bqDiffs, del, bigquery.QueryParameter{Name: "rows", Value: rows[lo:min(lo+bqChunk, len(rows))]}); err != nil {
			return err
		}
	}
	if _, err := insertMissing(ctx, b, bqDiffs, key, "", rows); err != nil {
		return err
	}
	return nil
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (b *BigQuery) Diffs(ctx context.Context) ([]Diff, error) {
	var out []Diff
	err := b.read(ctx, "read "+bqDiffs, `SELECT run_id, window_start, dims, streamed_revenue_micros,
recomputed_revenue_micros, delta_micros, streamed_count, recomputed_count, classification, applied_revision
FROM `+b.table(bqDiffs), nil, func(it *bigquery.RowIterator) error {
		var r bqDiff
		if err := it.Next(&r); err != nil {
			return err
		}
		d := Diff{RunID: r.RunID, WindowStart: r.WindowStart.UnixMilli(), Dims: r.Dims,
			StreamedRevenueMicros: r.StreamedRevenueMicros, RecomputedRevenueMicros: r.RecomputedRevenueMicros,
			DeltaMicros: r.DeltaMicros, StreamedCount: r.StreamedCount, RecomputedCount: r.RecomputedCount,
			Classification: r.Classification}
		if r.AppliedRevision.Valid {
			v := r.AppliedRevision.Int64
			d.AppliedRevision = &v
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortDiffs(out)
	return out, nil
}
