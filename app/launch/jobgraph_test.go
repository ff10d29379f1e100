package launch

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/sources"
	"google.golang.org/protobuf/proto"
)

// jobGraphSize builds the job Run would submit for source and sink and
// returns the size of its serialised pipeline proto, what a runner's job
// request carries.
func jobGraphSize(t *testing.T, source string, spec sink.Spec) int {
	t.Helper()
	o := options(t, source)
	o.Sink = spec
	po := o.Pipeline.WithDefaults()
	po.Published = spec
	fo := o.folderOptions(po)
	p, err := build(func(s beam.Scope) beam.PCollection {
		records, progress := sources.ReadFolder(s, source, fo)
		sink.WriteProgress(s, spec, "graph", progress)
		return records
	}, po, spec)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := cli.PipelineProto(context.Background(), o.Runner, p)
	if err != nil {
		t.Fatal(err)
	}
	return proto.Size(pb)
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
	stored, err := db.CurrentRows(context.Background())
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
