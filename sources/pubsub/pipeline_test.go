package pubsub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

// streamJob is the streaming pipeline over the emulator's subscription,
// running on prism (submitted through its job service, so that it can be
// cancelled like a production job).
type streamJob struct {
	*runnertest.Job
	signal      sources.StopSignal
	rows        collect.Handle[model.Row]
	tooLate     collect.Handle[model.TooLate]
	conflicts   collect.Handle[model.Conflict]
	quarantined collect.Handle[model.Quarantined]
}

func pipelineOptions() pipeline.Options {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	// The events are weeks old by the wall clock: an idle source would move
	// its watermark to now - bound and close every window. An hour of
	// processing time is far longer than any test.
	o.Watermark.IdleTimeout = time.Hour
	return o
}

func startStream(t *testing.T, archiveDir string) *streamJob {
	t.Helper()
	js, err := runnertest.StartJobServer()
	if err != nil {
		t.Fatal(err)
	}
	o := pipelineOptions()
	signal := sources.NewStopSignal(t.TempDir())
	p, s := beam.NewPipelineWithRoot()
	records := Read(s, "pubsub:"+testSub, Options{
		Stop:         signal,
		ArchiveDir:   archiveDir,
		Watermark:    o.Watermark,
		Event:        o.Event,
		PullTimeout:  300 * time.Millisecond,
		PollInterval: 50 * time.Millisecond,
	})
	out, err := pipeline.Build(s, records, o)
	if err != nil {
		t.Fatal(err)
	}
	sj := &streamJob{
		signal:      signal,
		rows:        collect.Into[model.Row](s, out.Rows, "rows"),
		tooLate:     collect.Into[model.TooLate](s, out.TooLate, "toolate"),
		conflicts:   collect.Into[model.Conflict](s, out.Conflicts, "conflicts"),
		quarantined: collect.Into[model.Quarantined](s, out.Quarantined, "quarantined"),
	}
	sj.Job, err = runnertest.Submit(js, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-sj.Done():
		default: // a test that failed half-way leaves its job running
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sj.Cancel(ctx)
		}
	})
	return sj
}

// stop is the launcher's graceful stop: no further pulls, then cancel.
func (j *streamJob) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := j.signal.Request(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := j.State(ctx); err != nil || st != jobpb.JobState_CANCELLED {
		t.Errorf("job state %v (%v), want CANCELLED", st, err)
	}
}

var (
	w10 = time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC).UnixMilli()
	w11 = time.Date(2026, 11, 4, 11, 0, 0, 0, time.UTC).UnixMilli()
)

// hasRow reports whether a row for window start with this state and count
// has come out.
func (j *streamJob) hasRow(start int64, st model.ResultState, count int64) func() bool {
	return func() bool {
		return slices.ContainsFunc(j.rows.Values(), func(r model.Row) bool {
			return r.WindowStart == start && r.State == st && r.EventCount == count
		})
	}
}

func (j *streamJob) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := j.WaitFor(30*time.Second, what, cond); err != nil {
		t.Fatalf("%v\nrows so far:\n%s", err, table(j.rows.Values()))
	}
}

func (e *emulator) acks(id string) func() bool {
	return func() bool { m := e.message(id); return m != nil && m.Acks > 0 }
}

// waitCounters polls the job's counters until the conservation identity
// holds with the wanted figures (committed counters lag the outputs).
func (j *streamJob) waitCounters(t *testing.T, want metrics.Counts) {
	t.Helper()
	var got metrics.Counts
	err := j.WaitFor(20*time.Second, "counters "+want.String(), func() bool {
		m, err := j.Metrics(context.Background())
		if err != nil {
			return false
		}
		got = metrics.Counts{
			Read:        runnertest.Counter(m, metrics.Namespace, "read"),
			Counted:     runnertest.Counter(m, metrics.Namespace, "counted"),
			Duplicates:  runnertest.Counter(m, metrics.Namespace, "duplicates"),
			Conflicts:   runnertest.Counter(m, metrics.Namespace, "conflicts"),
			Quarantined: runnertest.Counter(m, metrics.Namespace, "quarantined"),
			TooLate:     runnertest.Counter(m, metrics.Namespace, "too_late"),
		}
		return got.String() == want.String()
	})
	if err != nil {
		t.Errorf("%v; last seen %v", err, got)
	}
}

func row(start int64, revenue, count, rev int64, st model.ResultState) model.Row {
	return model.Row{WindowStart: start, WindowEnd: start + time.Hour.Milliseconds(), Dims: "{}",
		RevenueMicros: revenue * 1_000_000, EventCount: count, Revision: rev, State: st, Writer: "stream"}
}

func table(rows []model.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s %s n=%d rev=%d %s\n", model.FormatTime(r.WindowStart), r.Dims,
			model.FormatMicros(r.RevenueMicros), r.EventCount, r.Revision, r.State)
	}
	return b.String()
}

func sortRows(rows []model.Row) []model.Row {
	slices.SortFunc(rows, func(a, b model.Row) int {
		if a.WindowStart != b.WindowStart {
			return int(a.WindowStart - b.WindowStart)
		}
		return int(a.Revision - b.Revision)
	})
	return rows
}

// SPEC §7's minimal sequence through Pub/Sub: published out of event-time
// order, with one message (C) redelivered after a lost acknowledgement.
func TestMinimalSequenceOverPubSub(t *testing.T) {
	e := newEmulator(t, 2*time.Second)
	dir := t.TempDir()
	job := startStream(t, dir)

	ids := e.publish(
		purchase("B", "2026-11-04T10:20:00Z", "50"),
		purchase("A", "2026-11-04T10:15:00Z", "100"),
		purchase("A", "2026-11-04T10:15:00Z", "100.0"), // identical copy
	)
	for _, id := range ids {
		job.waitFor(t, "ack of "+id, e.acks(id))
	}
	e.publish(purchase("X", "2026-11-04T11:20:00Z", "1")) // watermark -> 11:10
	job.waitFor(t, "ON_TIME 150", job.hasRow(w10, model.OnTime, 2))

	c := e.publish(purchase("C", "2026-11-04T10:50:00Z", "20"))[0] // late, within lateness
	e.lost.lose(c)
	job.waitFor(t, "LATE 170", job.hasRow(w10, model.Late, 3))
	job.waitFor(t, "redelivery of C", e.acks(c)) // after its 2 s ack deadline

	a120 := e.publish(purchase("A", "2026-11-04T10:15:00Z", "120"))[0] // conflicting payload
	job.waitFor(t, "conflict", func() bool { return len(job.conflicts.Values()) == 1 })
	e.publish(purchase("Y", "2026-11-05T11:20:00Z", "2")) // watermark -> 11:10 next day
	job.waitFor(t, "FINAL 170", job.hasRow(w10, model.Final, 3))
	job.waitFor(t, "ON_TIME for 11:00", job.hasRow(w11, model.OnTime, 1))
	d := e.publish(purchase("D", "2026-11-04T10:10:00Z", "7"))[0] // too late
	job.waitFor(t, "too-late D", func() bool { return len(job.tooLate.Values()) == 1 })

	// read 9 (C twice) = counted 5 (A B X C Y) + duplicates 2 (A copy, C
	// redelivered) + conflicts 1 + too_late 1.
	job.waitCounters(t, metrics.Counts{Read: 9, Counted: 5, Duplicates: 2, Conflicts: 1, TooLate: 1})
	job.stop(t)

	got := sortRows(job.rows.Values())
	want := []model.Row{
		row(w10, 150, 2, 1, model.OnTime),
		row(w10, 170, 3, 2, model.Late),
		row(w10, 170, 3, 3, model.Final),
		row(w11, 1, 1, 1, model.OnTime),
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows differ\n got:\n%s want:\n%s", table(got), table(want))
	}
	if c := job.conflicts.Values(); len(c) != 1 || c[0].EventID != "A" || c[0].Position != "pubsub:"+a120 {
		t.Errorf("conflicts = %+v, want A at pubsub:%s", c, a120)
	}
	if tl := job.tooLate.Values(); len(tl) != 1 || tl[0].EventID != "D" || tl[0].Position != "pubsub:"+d {
		t.Errorf("too-late = %+v, want D at pubsub:%s", tl, d)
	}
	if q := job.quarantined.Values(); len(q) != 0 {
		t.Errorf("quarantined = %+v", q)
	}
	if m := e.message(c); m.Deliveries != 2 || e.lost.swallowed[c] != 1 {
		t.Errorf("C: %d deliveries, %d acks lost; want 2 and 1", m.Deliveries, e.lost.swallowed[c])
	}
	assertAckedArchived(t, e, dir)
	if lines, _ := archived(t, dir); len(lines) != 9 {
		t.Errorf("archive holds %d lines, want 9 (C twice)", len(lines))
	}
}
