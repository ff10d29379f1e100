package console

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func TestConsole(t *testing.T) {
	var out bytes.Buffer
	c := New(&out)
	ctx := context.Background()

	res, err := c.Write(ctx, sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
		sinktest.Snap(t, "2026-11-04T09:00:00Z", `{"country":"DE"}`, 3, model.Late, 12, 1_234_567_891),
	}})
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Accepted: 2})
	want := `-------------------------------------------
Batch: 0
-------------------------------------------
+--------------------+--------------------+----------------+-----------+-----------+--------+------------+
|        window_start|          window_end|            dims|    revenue|event_count|revision|result_state|
+--------------------+--------------------+----------------+-----------+-----------+--------+------------+
|2026-11-04T09:00:00Z|2026-11-04T10:00:00Z|{"country":"DE"}|1234.567891|         12|       3|        LATE|
|2026-11-04T10:00:00Z|2026-11-04T11:00:00Z|              {}| 150.000000|          2|       1|     ON_TIME|
+--------------------+--------------------+----------------+-----------+-----------+--------+------------+

`
	if out.String() != want {
		t.Fatalf("batch 0:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	b := sinktest.AuditBatch(t)
	b.Rows = []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000), // replayed
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
	}
	res, err = c.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Accepted: 1, Stale: 1, AuditInserted: 4})
	for _, line := range []string{
		"Batch: 1\n",
		"|2026-11-04T10:00:00Z|2026-11-04T11:00:00Z|  {}|170.000000|          3|       2|        LATE|\n",
		"stale: 1 (",
		"too_late: 2 (d1 @ 2026-11-04T10:10:00Z from p0/f.jsonl:4, d2 @ 2026-11-04T10:10:00.250Z from p1/g.jsonl:9)\n",
		"conflicts: 1 (a1 from p0/f.jsonl:5: fingerprint fedcba9876543210, first counted 0123456789abcdef)\n",
		"quarantined: 1 (malformed_json at p0/f.jsonl:7)\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("batch 1 lacks %q:\n%s", line, out.String())
		}
	}

	// Long audit lists are cut after a sample.
	out.Reset()
	var many sink.Batch
	for i := range 8 {
		many.Quarantined = append(many.Quarantined, model.Quarantined{Position: "p/f:" + string(rune('1'+i)), Reason: model.ReasonBadAmount})
	}
	if _, err := c.Write(ctx, many); err != nil {
		t.Fatal(err)
	}
	wantLine := "quarantined: 8 (bad_amount at p/f:1, bad_amount at p/f:2, bad_amount at p/f:3, bad_amount at p/f:4, bad_amount at p/f:5, ... and 3 more)\n"
	if !strings.Contains(out.String(), wantLine) {
		t.Errorf("batch 2 lacks %q:\n%s", wantLine, out.String())
	}
}
