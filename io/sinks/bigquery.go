package sinks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/model"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// EmulatorHostEnv names the variable that points the BigQuery sink at a
// local BigQuery API server (host:port, plain HTTP, no credentials), the way
// PUBSUB_EMULATOR_HOST does for Pub/Sub. The tests use it with
// github.com/goccy/bigquery-emulator.
const EmulatorHostEnv = "BIGQUERY_EMULATOR_HOST"

// StorageEmulatorHostEnv names the variable that points the Storage Write
// API client at a local gRPC server (host:port, plaintext, no credentials):
// the emulator's gRPC port, or the tests' offset-checking fake.
const StorageEmulatorHostEnv = "BIGQUERY_STORAGE_EMULATOR_HOST"

const (
	// bqChunk bounds the rows of one DML statement: its parameters travel in
	// the query request, which BigQuery caps (10 MB); 500 rows with 64 KiB
	// payloads stay well inside it.
	bqChunk = 500
	// bqAttempts bounds retries of a statement that failed transiently
	// (rate limits, backend errors, queued or concurrent DML on the same
	// table). Every statement is guarded by its table's key, so a retry
	// after an unknown outcome adds nothing twice.
	bqAttempts = 6
)

// BigQuery is the production sink (SPEC §5 on BigQuery); docs/bigquery.md
// says what is written how and which quotas the design stays under.
//
// The stream's rows go to append-only tables through the Storage Write API:
// the changelog (partitioned by day of window_start, clustered by the key,
// one row per (window_start, dims, revision)) and the three audit tables.
// No write reads anything first: the revision and state rules are kept
// where the rows are made (the keyed state of transforms.Revisions), and
// the hourly_revenue view keeps the highest revision per key. A row that
// reaches BigQuery twice (a replayed source, a restarted job) is the same
// row for the same key, so the view and every read here keep one per
// (key, revision), and one audit row per source_position.
//
// DML is used only where its quota fits: reconcile's corrections (rows whose
// writer is reconcile:<run_id>, inserted only above the stored revision and
// by SPEC §4's rules), reconcile_diffs and run_config.
//
// Source progress (ProgressStore) is two tables: the workers' checkpoints,
// appended like the audit rows, and the launcher's sealed resume points,
// inserted by DML (a few rows per seal). See bq_progress.go.
type BigQuery struct {
	client           *bigquery.Client
	api              appender
	writer           *managedwriter.Client
	project, dataset string
	// streams are the committed streams the appends reuse (nil: a new
	// stream per sealed batch).
	streams *streamPool
	// sleep waits between retries; tests shorten it.
	sleep func(context.Context, time.Duration) error
	// dmlStats is whether the server reports the rows a DML statement
	// changed (probed at open; BigQuery does, the emulator does not).
	dmlStats bool
}

var _ Sink = (*BigQuery)(nil)
var _ ConfigChecker = (*BigQuery)(nil)

// The progress tables' names (ProgressStore).
var (
	bqCheckpoints = SourceCheckpoints.Name
	bqResume      = SourceResume.Name
)

// OpenBigQuery connects to the dataset a bigquery: spec names, creating the
// dataset, tables and view that are missing. Credentials are Application
// Default Credentials; with BIGQUERY_EMULATOR_HOST set it talks plain HTTP to
// that host without credentials, and then BIGQUERY_STORAGE_EMULATOR_HOST must
// name the Storage Write API's local endpoint too.
func OpenBigQuery(ctx context.Context, spec sink.Spec) (*BigQuery, error) {
	if spec.Scheme != sink.SchemeBigQuery {
		return nil, fmt.Errorf("sink %s: not a bigquery spec", spec)
	}
	var opts, wopts []option.ClientOption
	if host := os.Getenv(EmulatorHostEnv); host != "" {
		opts = append(opts, option.WithEndpoint("http://"+host), option.WithoutAuthentication())
		grpcHost := os.Getenv(StorageEmulatorHostEnv)
		if grpcHost == "" {
			return nil, fmt.Errorf("bigquery sink %s: %s is set but %s is not: the Storage Write API would go to Google", spec, EmulatorHostEnv, StorageEmulatorHostEnv)
		}
		wopts = append(wopts, option.WithEndpoint(grpcHost), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	client, err := bigquery.NewClient(ctx, spec.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	// The write client's context outlives this call: managedwriter keeps it
	// for its connections, which Close ends.
	writer, err := managedwriter.NewClient(context.WithoutCancel(ctx), spec.Project, wopts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("bigquery sink %s: storage write client: %w", spec, err)
	}
	b := &BigQuery{client: client, writer: writer, project: spec.Project, dataset: spec.Dataset, sleep: sleepCtx,
		streams: newStreamPool(time.Now),
		api:     &writeAPI{client: writer, project: spec.Project, dataset: spec.Dataset, emulator: storageEmulator()}}
	// The client retries retryable answers with no end: bound the schema
	// check, so that an unreachable or stuck service is an error that names
	// it, not a start that never returns.
	sctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	if err := b.ensureSchema(sctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	return b, nil
}

// schemaTimeout bounds OpenBigQuery's schema check (a few metadata calls).
const schemaTimeout = 2 * time.Minute

func (b *BigQuery) String() string { return sink.SchemeBigQuery + ":" + b.project + "." + b.dataset }

// Close releases the clients.
func (b *BigQuery) Close() error {
	var errs []error
	if b.writer != nil {
		errs = append(errs, b.writer.Close())
	}
	if b.client != nil {
		errs = append(errs, b.client.Close())
	}
	return errors.Join(errs...)
}

// table renders a fully qualified, backquoted table reference. name is one of
// the constants above; project and dataset passed ParseSpec's patterns, which
// admit no backquote.
func (b *BigQuery) table(name string) string {
	return "`" + b.project + "." + b.dataset + "." + name + "`"
}

// Write writes a batch directly, without a runner: the stream's rows, the
// audit records and the source checkpoints are appended through the
// Storage Write API (each table's rows sealed into one committed stream,
// reused across calls as in the write step), reconcile's corrections go
// through DML under SPEC §4's rules.
// The pipeline writes its rows and checkpoints through the keyed, batched
// append step of sinks.Write and sinks.WriteProgress instead.
//
// Accepted counts appended stream rows plus accepted corrections, Stale the
// corrections refused; AuditInserted counts appended audit rows (copies of a
// position within the batch are appended once). What a replayed row changes
// is decided by the reads: one row per (key, revision) and per position.
func (b *BigQuery) Write(ctx context.Context, batch Batch) (Result, error) {
	if err := validateBatch(batch); err != nil {
		return Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
	}
	var res Result
	var stream, corrections []model.Row
	for _, r := range batch.Rows {
		if isReconcile(r) {
			corrections = append(corrections, r)
		} else {
			stream = append(stream, r)
		}
	}
	now := time.Now()
	rt := rowTypesFor(b.emulator())
	tables := []struct {
		name string
		rows [][]byte
		err  error
	}{{name: bqChangelog}, {name: bqTooLate}, {name: bqConflicts}, {name: bqQuarantined}, {name: bqCheckpoints}}
	for _, r := range sortedRows(stream) {
		row, err := encodeSnapshot(rt, r, now)
		tables[0].rows, tables[0].err = append(tables[0].rows, row), errors.Join(tables[0].err, err)
	}
	for _, t := range uniqueBy(batch.TooLate, func(t model.TooLate) string { return t.Position }) {
		row, err := encodeRow(rt, tooLateCodec, t)
		tables[1].rows, tables[1].err = append(tables[1].rows, row), errors.Join(tables[1].err, err)
	}
	for _, c := range uniqueBy(batch.Conflicts, func(c model.Conflict) string { return c.Position }) {
		row, err := encodeRow(rt, conflictCodec, c)
		tables[2].rows, tables[2].err = append(tables[2].rows, row), errors.Join(tables[2].err, err)
	}
	for _, q := range uniqueBy(batch.Quarantined, func(q model.Quarantined) string { return q.Position }) {
		row, err := encodeRow(rt, quarantinedCodec, q)
		tables[3].rows, tables[3].err = append(tables[3].rows, row), errors.Join(tables[3].err, err)
	}
	for _, c := range batch.Progress {
		row, err := encodeRow(rt, checkpointCodec, checkpointRow{Checkpoint: c, At: now})
		tables[4].rows, tables[4].err = append(tables[4].rows, row), errors.Join(tables[4].err, err)
	}
	for i, t := range tables {
		if t.err != nil {
			return Result{}, fmt.Errorf("bigquery sink %s: %s: %w", b, t.name, t.err)
		}
		if len(t.rows) == 0 {
			continue
		}
		// The write step's rules with nothing in between: each row
		// buffered, then flush steps until nothing is left (seal, append).
		st := &memStore{}
		for _, row := range t.rows {
			if _, _, err := onRow(ctx, st, b.api, b.streams, t.name, row, DefaultFlushPolicy, false, b.sleep); err != nil {
				return Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
			}
		}
		for pending := true; pending; {
			r, err := flushStep(ctx, st, b.api, b.streams, t.name, false, b.sleep)
			if err != nil {
				return Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
			}
			pending = r.Pending
		}
		switch i {
		case 0:
			res.Accepted += len(t.rows)
		case 1, 2, 3:
			res.AuditInserted += len(t.rows)
		}
	}
	if len(corrections) > 0 {
		accepted, stale, err := b.writeRows(ctx, corrections)
		if err != nil {
			return Result{}, err
		}
		res.Accepted += accepted
		res.Stale += stale
	}
	return res, nil
}

// emulator reports whether the appends go to the emulator (see bqRowType).
func (b *BigQuery) emulator() bool {
	w, ok := b.api.(*writeAPI)
	return ok && w.emulator
}
