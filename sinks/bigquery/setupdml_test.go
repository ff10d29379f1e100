package bigquery

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// dmlCounter is a REST proxy in front of the emulator that records every
// DML statement a client sends (a query job whose SQL is INSERT, UPDATE,
// DELETE or MERGE).
type dmlCounter struct {
	mu    sync.Mutex
	stmts []string
}

var dmlRE = regexp.MustCompile(`(?is)"query"\s*:\s*"\s*((?:INSERT|UPDATE|DELETE|MERGE)\b[^"]{0,80})`)

func (c *dmlCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.stmts
	c.stmts = nil
	return out
}

// countDML puts a dmlCounter in front of the emulator bqtest.Start set up
// and points BIGQUERY_EMULATOR_HOST at it.
func countDML(t *testing.T) *dmlCounter {
	t.Helper()
	bqtest.Start(t)
	host := os.Getenv(EmulatorHostEnv)
	if host == "" {
		t.Fatalf("%s not set", EmulatorHostEnv)
	}
	target := &url.URL{Scheme: "http", Host: strings.TrimPrefix(host, "http://")}
	c := &dmlCounter{}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if m := dmlRE.FindSubmatch(body); m != nil {
				c.mu.Lock()
				c.stmts = append(c.stmts, string(m[1]))
				c.mu.Unlock()
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(EmulatorHostEnv, strings.TrimPrefix(srv.URL, "http://"))
	return c
}

// TestBigQuerySeedReadIssuesNoDML: every instance of the revision step reads
// the sink's current rows in Setup (sink.Published), on every worker, at
// every start and every restore from a checkpoint; the write step opens the
// sink in Setup too. Those opens must not run DML: BigQuery queues at most 20
// mutating statements (UPDATE, DELETE, MERGE) per table and fails the rest
// (docs/bigquery.md, "Quotas"), so a job whose workers' instances start
// together, as every Flink restore starts them, would fail its Setups. Only
// the launcher and reconcile write with DML.
func TestBigQuerySeedReadIssuesNoDML(t *testing.T) {
	ctx := context.Background()
	dml := countDML(t)
	spec := sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "revenue"}

	// The launcher creates the dataset and stores a row (its DML is its own).
	s, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write(ctx, sink.Batch{Rows: []model.Row{{WindowStart: sinktest.T10, WindowEnd: sinktest.T10 + sinktest.Hour,
		Dims: "{}", RevenueMicros: 150_000_000, EventCount: 2, Revision: 1, State: model.OnTime}}}); err != nil {
		t.Fatal(err)
	}
	dml.take()

	// Three revision-step instances start.
	for i := range 3 {
		rows, err := sink.Published(ctx, spec, sink.SeedBound{})
		if err != nil || len(rows) != 1 {
			t.Fatalf("instance %d: Published = %v, %v; want the stored row", i, rows, err)
		}
	}
	// A write step's instance opens the sink.
	w, err := sink.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := dml.take(); len(got) != 0 {
		t.Errorf("the workers' Setups sent %d DML statements, want none: %q", len(got), got)
	}
}
