package bigquery

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func init() {
	register.DoFn2x0[[]byte, func(model.Row)](&tickRowsFn{})
	register.Emitter1[model.Row]()
}

// tickRowsFn emits its rows at every tick of a clock: an input that never
// ends, as a follower's or a subscription's.
type tickRowsFn struct{ Rows []model.Row }

func (f *tickRowsFn) ProcessElement(_ []byte, emit func(model.Row)) {
	for _, r := range f.Rows {
		emit(r)
	}
}

// TestBigQueryClockFlushesAStreamingJob runs the write step on prism over an
// unbounded input with the clock on (FlushPolicy.Clock) and no
// processing-time timer anywhere: every row must reach the table while the
// job runs, on the clock's ticks alone (the end-of-input drain never fires
// in a job whose input never ends). The job runs in a child process, which
// waits on the table with a deadline and exits once every row is there:
// a streaming job ends only by a cancel, and prism (v2.77.0) cancelled in
// a process poisons the jobs that process runs after it ("send on closed
// channel" in stage.Execute; later write steps lost rows). Without the
// clock (Clock false) nothing reaches the table before the deadline: the
// child fails, and so does the test.
func TestBigQueryClockFlushesAStreamingJob(t *testing.T) {
	const done = "every row reached the table while the job ran"
	if os.Getenv(clockChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBigQueryClockFlushesAStreamingJob$", "-test.v", "-test.timeout=3m")
		cmd.Env = append(os.Environ(), clockChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte(done)) {
			t.Fatalf("the streaming job's process: %v; its output ends:\n%s", err, out[max(0, len(out)-3000):])
		}
		return
	}
	fake, api := startFakeWrite(t)
	spec := sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "clock"}
	fakeSink(t, &BigQuery{api: api, project: bqtest.Project, dataset: "clock", sleep: noSleep})
	var rows []model.Row
	for k := range 12 {
		rows = append(rows, sinktest.Snap(t, "2026-11-04T10:00:00Z", `{"shop":"`+string(rune('A'+k))+`"}`, 1, model.Final, 1, int64(k)))
	}
	b := sinktest.AuditBatch(t)
	p, s := beam.NewPipelineWithRoot()
	live := beam.ParDo(s, &tickRowsFn{Rows: rows}, clock.Ticks(s, 100*time.Millisecond))
	sink.Write(s, spec, sink.FlushPolicy{Interval: 50 * time.Millisecond, MaxRows: 1_000_000, MaxBytes: 1 << 30, Shards: 2, Clock: true},
		live, beam.CreateList(s, b.TooLate), beam.CreateList(s, b.Conflicts), beam.CreateList(s, b.Quarantined))

	ended := make(chan error, 1)
	go func() {
		_, err := prism.Execute(context.Background(), p)
		ended <- err
	}()
	keys := func() int {
		seen := map[string]bool{}
		for _, r := range fake.rows(table.HourlyRevenueChangelog.Name) {
			v, err := bqRowTypes[table.HourlyRevenueChangelog.Name].decode(r)
			if err != nil {
				t.Fatal(err)
			}
			seen[v["dims"].(string)] = true
		}
		return len(seen)
	}
	audit := func() int {
		return len(fake.rows(table.TooLateEvents.Name)) + len(fake.rows(table.ConflictEvents.Name)) + len(fake.rows(table.QuarantinedEvents.Name))
	}
	deadline := time.Now().Add(time.Minute)
	for keys() < len(rows) || audit() < 4 {
		select {
		case err := <-ended:
			t.Fatalf("the streaming job ended (%v) with %d of %d keys and %d of 4 audit rows stored", err, keys(), len(rows), audit())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1m the table holds %d of %d keys and %d of 4 audit rows: the clock flushed nothing", keys(), len(rows), audit())
		}
	}
	fmt.Println(done)
	os.Exit(0) // the job runs on: end it with the process
}

// clockChildEnv marks the child process of TestBigQueryClockFlushesAStreamingJob.
const clockChildEnv = "SINKS_CLOCK_TEST_CHILD"
