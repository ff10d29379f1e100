package launch

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/funcx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
	"github.com/revenue-stream/hourly/testing/sinktest"
	"google.golang.org/protobuf/proto"
)

// jobGraphSize builds the job Run would submit for source and sink and
// returns the size of its serialised pipeline proto, what a runner's job
// request carries.
func jobGraphSize(t *testing.T, source string, spec sink.Spec) int {
	t.Helper()
	p, runner := jobGraph(t, source, spec, "")
	pb, err := cli.PipelineProto(context.Background(), runner, p)
	if err != nil {
		t.Fatal(err)
	}
	return proto.Size(pb)
}

// jobGraph builds the job Run would submit for source (a folder or a Pub/Sub
// subscription) and sink, with
// --early-source early ("": the runner's default), and returns it with its
// runner.
func jobGraph(t *testing.T, source string, spec sink.Spec, early string) (*beam.Pipeline, string) {
	t.Helper()
	o := options(t, source)
	if early != "" {
		o.Pipeline.EarlySource = early
	}
	o.Sink = spec
	po := o.Pipeline.WithDefaults()
	po.Published = spec
	read := func(s beam.Scope) beam.PCollection {
		records, progress := sources.ReadFolder(s, source, o.folderOptions(po))
		sink.WriteProgress(s, spec, sink.DefaultFlushPolicy, "graph", progress)
		return records
	}
	if o.IsPubSub() {
		read = func(s beam.Scope) beam.PCollection { return pubsub.Read(s, source, o.pubsubOptions(po)) }
	}
	p, err := build(read, po, spec, sink.DefaultFlushPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return p, o.Runner
}

// graphCase is one job graph the graph walks check.
type graphCase struct {
	name, source string
	sink         sink.Spec
	early        string
}

// graphCases are the embedded job (a folder into SQLite, with either EARLY
// source) and the production one (Pub/Sub into BigQuery).
func graphCases(t *testing.T) []graphCase {
	folder := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	sqliteSpec := sink.Spec{Scheme: sink.SchemeSQLite, Path: filepath.Join(t.TempDir(), "a.db")}
	bq, err := sink.ParseSpec("bigquery:my-project.revenue")
	if err != nil {
		t.Fatal(err)
	}
	return []graphCase{
		{"folder to sqlite, EARLY by timers", folder, sqliteSpec, pipeline.EarlyTimer},
		{"folder to sqlite, EARLY by impulse", folder, sqliteSpec, pipeline.EarlyImpulse},
		{"pubsub to bigquery", "pubsub:projects/p/subscriptions/revenue", bq, pipeline.EarlyImpulse},
	}
}

// TestEveryEmitterIsRegistered: each emitter a DoFn of the job declares has
// the SDK's generated emitter (register.EmitterN). Without one the SDK
// falls back to reflection for every element (reflect.MakeFunc): no error,
// only a slower job (issue #26 found dedup's events emitted so, 5 % of the
// bench's CPU, when the one registration moved away with the DoFn beside it).
func TestEveryEmitterIsRegistered(t *testing.T) {
	for _, c := range graphCases(t) {
		p, _ := jobGraph(t, c.source, c.sink, c.early)
		edges, _, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		dofns := 0
		for _, e := range edges {
			if e.DoFn == nil {
				continue
			}
			dofns++
			fn := e.DoFn.ProcessElementFn()
			for _, i := range fn.Params(funcx.FnEmit) {
				if typ := fn.Param[i].T; !exec.IsEmitterRegistered(typ) {
					t.Errorf("%s: %s emits through %v, which has no registered emitter", c.name, e.Name(), typ)
				}
			}
		}
		if dofns < 10 {
			t.Fatalf("%s: %d DoFns in the job graph: not the whole job", c.name, dofns)
		}
	}
}

// TestEveryCoderHasAGeneratedCaller: each custom coder of the job's
// collections is called through the SDK's generated caller
// (coders.Register), not reflect.Value.Call once per element. The
// reflection-based caller's type is read off a function no one registered,
// so the test cannot pass by naming a type the SDK has renamed.
func TestEveryCoderHasAGeneratedCaller(t *testing.T) {
	reflectCall := fmt.Sprintf("%T", reflectx.MakeFunc(func(struct{ unregistered bool }) []byte { return nil }))
	custom := map[string]bool{}
	var walk func(c *coder.Coder)
	walk = func(c *coder.Coder) {
		if c == nil {
			return
		}
		if c.Custom != nil {
			for _, f := range []*funcx.Fn{c.Custom.Enc, c.Custom.Dec} {
				custom[c.Custom.Type.String()] = true
				if got := fmt.Sprintf("%T", f.Fn); got == reflectCall {
					t.Errorf("the coder of %v calls %s through reflection (%s)", c.Custom.Type, f.Fn.Name(), got)
				}
			}
		}
		for _, sub := range c.Components {
			walk(sub)
		}
	}
	for _, c := range graphCases(t) {
		p, _ := jobGraph(t, c.source, c.sink, c.early)
		_, nodes, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			walk(n.Coder)
		}
	}
	if !custom["model.EventBatch"] || !custom["model.Row"] || !custom["pubsub.readerKey"] {
		t.Fatalf("custom coders in the job graphs: %v; want model.EventBatch, model.Row and pubsub.readerKey among them", custom)
	}
}

// TestJobGraphHoldsNoHistory: the rows a sink already holds reach the
// revision step inside the job (read by the step on its worker, sink.Published), never through the job
// graph: with 100,000 stored keys the serialised pipeline is exactly as
// large as with an empty sink (it used to carry about 200 bytes per key).
func TestJobGraphHoldsNoHistory(t *testing.T) {
	dir := t.TempDir()
	source := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	empty := sink.Spec{Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "a.db")}
	full := sink.Spec{Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "b.db")}

	const keys = 100_000
	db, err := sqlite.Open(context.Background(), full.Path)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour.Milliseconds()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var b sink.Batch
	for i := range keys {
		ws := start + int64(i/100)*hour
		state := model.Final
		if i >= keys-100 {
			state = model.OnTime // the last hour is still open
		}
		b.Rows = append(b.Rows, model.Row{WindowStart: ws, WindowEnd: ws + hour, Dims: fmt.Sprintf(`{"country":"c%02d"}`, i%100),
			RevenueMicros: int64(i) * 1_000_000, EventCount: int64(i%7 + 1), Revision: 2, State: state, Writer: "stream"})
	}
	if _, err := db.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	stored, err := sinktest.CurrentRows(context.Background(), db)
	if err != nil || len(stored) != keys {
		t.Fatalf("the sink holds %d rows (%v), want %d", len(stored), err, keys)
	}
	db.Close()

	emptySize, fullSize := jobGraphSize(t, source, empty), jobGraphSize(t, source, full)
	t.Logf("serialised pipeline: %d bytes with an empty sink, %d bytes with %d stored keys", emptySize, fullSize, keys)
	if fullSize != emptySize {
		t.Errorf("the job graph grows with the sink: %d bytes with %d stored keys, %d with none", fullSize, keys, emptySize)
	}
}
