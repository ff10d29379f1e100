package reconcile_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
)

// Reconcile a raw log against a sink whose stream lost a too-late event:
// the FINAL row of 10:00 holds A and B, while the raw log also has C, which
// reached the stream after the window had closed.
func ExampleRun() {
	tmp, err := os.MkdirTemp("", "reconcile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "log", "p0")
	if err := os.MkdirAll(src, 0o755); err != nil {
		log.Fatal(err)
	}
	raw := `{"event_id":"A","event_time":"2026-11-04T10:15:00Z","user_id":"u1","amount":"100.00"}
{"event_id":"B","event_time":"2026-11-04T10:20:00Z","user_id":"u2","amount":"50"}
{"event_id":"A","event_time":"2026-11-04T10:15:00Z","user_id":"u1","amount":100}
{"event_id":"X","event_time":"2026-11-05T11:20:00Z","user_id":"u3","amount":"1"}
{"event_id":"C","event_time":"2026-11-04T10:50:00Z","user_id":"u4","amount":"20"}
`
	if err := os.WriteFile(filepath.Join(src, "events.jsonl"), []byte(raw), 0o644); err != nil {
		log.Fatal(err)
	}

	// What the stream wrote (cmd/launch does this for real).
	db := filepath.Join(tmp, "revenue.db")
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	hour := func(s string) int64 { t, _ := time.Parse(time.RFC3339, s); return t.UnixMilli() }
	final := func(start string, micros, count int64) model.Row {
		return model.Row{WindowStart: hour(start), WindowEnd: hour(start) + 3_600_000, Dims: "{}",
			RevenueMicros: micros, EventCount: count, Revision: 2, State: model.Final, Writer: "stream"}
	}
	_, err = store.Write(ctx, sink.Batch{
		Rows: []model.Row{final("2026-11-04T10:00:00Z", 150_000_000, 2), final("2026-11-05T11:00:00Z", 1_000_000, 1)},
		Audit: sink.Audit{TooLate: []model.TooLate{{Position: "p0/events.jsonl:5", EventID: "C", EventTime: hour("2026-11-04T10:50:00Z"),
			Payload: []byte(`{"event_id":"C",...}`)}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	store.Close()

	o := reconcile.Defaults()
	o.Source = filepath.Join(tmp, "log")
	o.Sink = sink.Spec{Scheme: sink.SchemeSQLite, Path: db}
	o.Apply = true
	o.RunID = "example"
	o.Now = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) // the read time future checks use
	out, err := reconcile.Run(ctx, o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", out.ExitCode())
	for _, d := range out.Diffs {
		fmt.Printf("%s %s: streamed %s, recomputed %s, %s, applied as revision %d\n", model.FormatTime(d.WindowStart), d.Dims,
			model.FormatMicros(d.Streamed.RevenueMicros), model.FormatMicros(d.Recomputed.RevenueMicros), d.Classification, d.AppliedRevision)
	}

	o.RunID = "again"
	again, err := reconcile.Run(ctx, o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second run: exit code", again.ExitCode(), "differing", len(again.Diffs))
	// Output:
	// exit code: 0
	// 2026-11-04T10:00:00Z {}: streamed 150.000000, recomputed 170.000000, too_late, applied as revision 3
	// second run: exit code 0 differing 0
}
