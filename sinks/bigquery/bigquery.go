package bigquery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	gbq "cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/retry"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// EmulatorHostEnv and StorageEmulatorHostEnv point the sink at a local
// BigQuery API server (plain HTTP) and Storage Write API server (plaintext
// gRPC), without credentials, as the tests do.
const (
	EmulatorHostEnv        = "BIGQUERY_EMULATOR_HOST"
	StorageEmulatorHostEnv = "BIGQUERY_STORAGE_EMULATOR_HOST"
)

const (
	// bqChunk bounds the rows of one DML statement, whose parameters must fit
	// BigQuery's 10 MB request.
	bqChunk = 500
	// bqAttempts bounds the tries of a transiently failing call (bqRetry).
	// Every one is safe to repeat: a statement is guarded by its table's key
	// and an append carries its offset, so a retry adds nothing twice.
	bqAttempts = 6
)

// BigQuery is the production sink (docs/bigquery.md): rows are appended
// through the Storage Write API without reading first (transforms.Revisions
// keeps the revision rules; every read keeps one row per key and revision or
// per source_position). DML only where its quota fits: reconcile's writes,
// run_config and source_resume.
type BigQuery struct {
	sqlread.DB
	client           *gbq.Client
	api              appender
	writer           *managedwriter.Client
	project, dataset string
	streams          *streamPool // nil: a new stream per sealed batch
	sleep            func(context.Context, time.Duration) error
	// dmlStats says whether the server reports the rows DML changed (the
	// emulator does not): nil until reportsDMLStats probed it, under probe.
	probe    sync.Mutex
	dmlStats *bool
}

var _ sink.Sink = (*BigQuery)(nil)
var _ sink.ConfigChecker = (*BigQuery)(nil)

func init() {
	sink.Register(sink.SchemeBigQuery, sink.Backend{Write: writeBigQuery, WriteProgress: writeBigQueryProgress,
		Open: func(ctx context.Context, spec sink.Spec) (sink.Sink, error) { return Open(ctx, spec) },
		Existing: func(ctx context.Context, spec sink.Spec, _ bool) (sink.Sink, bool, error) {
			b, err := Open(ctx, spec)
			return b, err == nil, err
		}})
}

// Open connects to the dataset a bigquery: spec names with
// Application Default Credentials (or the emulators, see EmulatorHostEnv),
// creating the dataset, tables and view that are missing.
func Open(ctx context.Context, spec sink.Spec) (*BigQuery, error) {
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
	client, err := gbq.NewClient(ctx, spec.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	// managedwriter keeps the context for its connections, which Close ends.
	writer, err := managedwriter.NewClient(context.WithoutCancel(ctx), spec.Project, wopts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("bigquery sink %s: storage write client: %w", spec, err)
	}
	b := &BigQuery{client: client, writer: writer, project: spec.Project, dataset: spec.Dataset, sleep: retry.Sleep,
		streams: newStreamPool(time.Now),
		api:     &writeAPI{client: writer, project: spec.Project, dataset: spec.Dataset, emulator: storageEmulator()}}
	b.DB = sqlread.DB{Rows: b.rows, From: b.from, ReadChangelog: b.changelog, Extreme: b.extremeTime, Dialect: bqDialect}
	// The client retries without end: bound the schema check, so that an
	// unreachable service is an error, not a start that never returns.
	sctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	if err := b.ensureSchema(sctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("bigquery sink %s: %w", spec, err)
	}
	return b, nil
}

// schemaTimeout bounds Open's schema check (a few metadata calls).
const schemaTimeout = 2 * time.Minute

func (b *BigQuery) String() string { return sink.SchemeBigQuery + ":" + b.project + "." + b.dataset }

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

// table renders a backquoted table reference (ParseSpec admits no backquote).
func (b *BigQuery) table(name string) string {
	return "`" + b.project + "." + b.dataset + "." + name + "`"
}

// Write writes a batch without a runner (the pipeline uses the keyed append
// step of Write instead): rows, audit records and checkpoints are appended
// with the write step's rules, reconcile's corrections go through DML. Stale
// counts only refused corrections: the reads dedupe replayed rows.
func (b *BigQuery) Write(ctx context.Context, batch sink.Batch) (sink.Result, error) {
	if err := batch.Validate(); err != nil {
		return sink.Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
	}
	var res sink.Result
	sorted := rules.SortedRows(batch.Rows)
	stream := slices.DeleteFunc(slices.Clone(sorted), model.Row.ByReconcile)
	corrections := slices.DeleteFunc(sorted, func(r model.Row) bool { return !r.ByReconcile() })
	// Each table's rows in order, an audit record once per position, all
	// encoded before any is appended.
	now, rt := time.Now(), rowTypesFor(b.emulator())
	rows, seen := map[string][][]byte{}, map[string]bool{}
	for _, v := range slices.Concat(anys(stream), anys(batch.TooLate), anys(batch.Conflicts),
		anys(batch.Quarantined), anys(batch.Progress)) {
		t, key, row, err := appendRow(rt, v, now)
		if err != nil {
			return sink.Result{}, fmt.Errorf("bigquery sink %s: %s: %w", b, t.Name, err)
		}
		if table.IsAudit(t) && seen[t.Name+"/"+key] {
			continue
		}
		seen[t.Name+"/"+key] = true
		rows[t.Name] = append(rows[t.Name], row)
	}
	for _, name := range appendTables {
		// As flushStep: seal the rows, then append them in requests.
		if len(rows[name]) > 0 {
			sb, err := seal(ctx, b.api, b.streams, name, rows[name])
			if err == nil {
				_, err = appendSealed(ctx, b.api, b.streams, name, sb, b.sleep)
			}
			if err != nil {
				return sink.Result{}, fmt.Errorf("bigquery sink %s: %w", b, err)
			}
		}
		switch {
		case name == table.HourlyRevenueChangelog.Name:
			res.Accepted += len(rows[name])
		case name != table.SourceCheckpoints.Name:
			res.AuditInserted += len(rows[name])
		}
	}
	if len(corrections) > 0 {
		accepted, stale, err := b.writeRows(ctx, corrections)
		if err != nil {
			return sink.Result{}, err
		}
		res.Accepted += accepted
		res.Stale += stale
	}
	return res, nil
}

func anys[T any](vs []T) []any { return slicesx.Map(vs, func(v T) any { return v }) }

func (b *BigQuery) emulator() bool {
	w, ok := b.api.(*writeAPI)
	return ok && w.emulator
}
