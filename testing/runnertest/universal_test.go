package runnertest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

func TestMain(m *testing.M) {
	if os.Getenv("DEBUG_PRISM") != "" {
		beamlog.LogLevel, beamlog.LogKind = "debug", "text"
		beamlog.SetupLoggingWithDefault()
	}
	os.Exit(ptest.MainRet(m))
}

var purchase = rowtest.OwnPurchase

// The streaming pipeline, submitted to a job server the way a Flink job
// server receives it (--runner=universal --endpoint=localhost:PORT
// --environment_type=LOOPBACK): the folder source replays SPEC §7's minimal
// sequence, the job completes, and its FINAL rows and audit outputs are
// what the offline oracle recomputes from the same log.
func TestPortableJobServerReplay(t *testing.T) {
	js, err := runnertest.StartJobServer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := []string{
		purchase("A", "2026-11-04T10:15:00Z", "100"),
		purchase("B", "2026-11-04T10:20:00Z", "50"),
		purchase("A", "2026-11-04T10:15:00Z", "100.0"), // identical copy
		purchase("X", "2026-11-04T11:20:00Z", "1"),     // partition watermark -> 11:10
		purchase("C", "2026-11-04T10:50:00Z", "20"),    // late, within lateness
		purchase("A", "2026-11-04T10:15:00Z", "120"),   // conflicting payload
		purchase("Y", "2026-11-05T11:20:00Z", "2"),     // watermark -> 11:10 next day
		purchase("D", "2026-11-04T10:10:00Z", "7"),     // too late
	}
	if err := os.MkdirAll(filepath.Join(dir, "p0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p0", "000001.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	o := pipeline.Defaults()
	o.Triggers.Early = 0 // a bounded replay has no EARLY rows
	p, s := beam.NewPipelineWithRoot()
	records, _ := sources.ReadFolder(s, dir, sources.FolderOptions{Watermark: o.Watermark, Event: o.Event})
	out, err := pipeline.Build(s, records, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	tooLate := collect.Into[model.TooLate](s, out.TooLate, "toolate")
	conflicts := collect.Into[model.Conflict](s, out.Conflicts, "conflicts")

	start := time.Now()
	job, err := runnertest.Submit(js, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	res, err := job.Wait(ctx)
	if err != nil {
		t.Fatalf("job failed: %v", err)
	}
	if st, err := job.State(ctx); err != nil || st != jobpb.JobState_DONE {
		t.Fatalf("job state %v (%v), want DONE", st, err)
	}
	t.Logf("portable job %s completed in %v", job.ID, time.Since(start).Round(time.Millisecond))

	counts := collect.Counts(res)
	if err := counts.Check(); err != nil {
		t.Error(err)
	}
	if counts.Read != int64(len(lines)) || counts.Counted != 5 || counts.Duplicates != 1 || counts.Conflicts != 1 || counts.TooLate != 1 {
		t.Errorf("counts %v, want read 8 = counted 5 + duplicates 1 + conflicts 1 + too_late 1", counts)
	}

	want, err := oracle.Replay(dir, oracle.DefaultSettings(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	final := map[oracle.Key]oracle.Total{}
	byKey := map[oracle.Key][]model.Row{}
	for _, r := range rows.Values() {
		k := oracle.Key{WindowStart: r.WindowStart, Dims: r.Dims}
		byKey[k] = append(byKey[k], r)
		if r.State == model.Final {
			final[k] = oracle.Total{RevenueMicros: r.RevenueMicros, Count: r.EventCount}
		}
	}
	if d := oracle.Diff(want.Final, final); len(d) > 0 {
		t.Errorf("FINAL rows differ from the oracle:\n%s\n got:\n%s want:\n%s", strings.Join(d, "\n"), oracle.Format(final), oracle.Format(want.Final))
	}
	ten := oracle.Key{WindowStart: time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC).UnixMilli(), Dims: "{}"}
	if got := final[ten]; got.RevenueMicros != 170_000_000 || got.Count != 3 {
		t.Errorf("FINAL [10:00, 11:00) = %v, want 170 from 3 events", got)
	}
	// Every key's changelog: revisions strictly increase, ending in FINAL.
	for k, rs := range byKey {
		slices.SortFunc(rs, func(a, b model.Row) int { return int(a.Revision - b.Revision) })
		for i, r := range rs {
			if r.Revision != int64(i+1) {
				t.Errorf("%v: revisions %v", k, rs)
				break
			}
		}
		if last := rs[len(rs)-1]; last.State != model.Final {
			t.Errorf("%v: last row %v, want FINAL", k, last.State)
		}
	}

	if tl := tooLate.Values(); len(tl) != 1 || tl[0].EventID != "D" || tl[0].Position != "p0/000001.jsonl:8" {
		t.Errorf("too-late = %+v, want D at p0/000001.jsonl:8", tl)
	}
	if c := conflicts.Values(); len(c) != 1 || c[0].EventID != "A" || c[0].Position != "p0/000001.jsonl:6" {
		t.Errorf("conflicts = %+v, want A at p0/000001.jsonl:6", c)
	}
	if got := counts.Counters["read_partition_p0"]; got != 8 {
		t.Errorf("read_partition_p0 = %d", got)
	}
}
