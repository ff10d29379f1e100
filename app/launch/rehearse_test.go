package launch

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// TestRehearseFlinkOnPrism runs a follower on prism as Flink's portable
// runner would run it (--rehearse=flink): the submission passed Flink's
// capability check, so no step needs a processing-time timer; EARLY rows
// come from the job's clock (the periodic impulse) and the BigQuery sink
// appends on that clock too. Its rows must equal, window by window and
// state by state, those of a default run on prism (EARLY from
// processing-time timers) into SQLite, fed the same lines at the same
// moments: ON_TIME 150 for 10:00, EARLY 1 for the open 11:00 window while
// the job runs, then LATE 170 once C arrives and EARLY 3 once Z does; the
// stop is graceful and the figures conserved.
func TestRehearseFlinkOnPrism(t *testing.T) {
	bqtest.Start(t)
	ten, eleven := ms("2026-11-04T10:00:00Z"), ms("2026-11-04T11:00:00Z")
	follow := func(name string, o Options) []model.Row {
		t.Helper()
		o.Follow = true
		o.Pipeline.Triggers.Early = time.Second
		o.PollInterval = 100 * time.Millisecond
		o.QuietPeriod = 500 * time.Millisecond
		dir := o.Source
		job := runInBackground(t, o)
		has := func(ws int64, state model.ResultState) func(model.Row) bool {
			return func(r model.Row) bool { return r.WindowStart == ws && r.State == state }
		}
		waitForSinkRow(t, job, o.Sink, name+": ON_TIME for 10:00 and EARLY for 11:00", has(ten, model.OnTime), has(eleven, model.Early))
		// C is late, within lateness; Z moves the partition's watermark on,
		// which releases C in position order (Flink's default), where a
		// batch waits for the watermark to pass it.
		appendFile(t, dir, "000002.jsonl", purchase("C", "2026-11-04T10:50:00Z", "u4", "20"), purchase("Z", "2026-11-04T11:40:00Z", "u5", "2"))
		waitForSinkRow(t, job, o.Sink, name+": LATE for 10:00 and EARLY 3 for 11:00", has(ten, model.Late), func(r model.Row) bool {
			return r.WindowStart == eleven && r.State == model.Early && r.RevenueMicros == 3_000_000
		})
		sum, _ := job.stopAndWait(t, time.Minute)
		wantCounts(t, sum, 5, 5, 0, 0, 0, 0)
		if o.Rehearse != "" && (sum.Runner != "prism" || o.Pipeline.EarlySource != pipeline.EarlyImpulse) {
			t.Errorf("%s: ran on %q with --early-source=%s, want prism and the impulse", name, sum.Runner, o.Pipeline.EarlySource)
		}
		return sum.Current()
	}
	lines := []string{
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T10:20:00Z", "u2", "50"),
		purchase("X", "2026-11-04T11:20:00Z", "u3", "1"), // watermark 11:10: ON_TIME for 10:00, 11:00 open
	}

	def, err := Parse([]string{"--source=" + writeLog(t, lines...), "--sink=sqlite:" + t.TempDir() + "/revenue.db"})
	if err != nil {
		t.Fatal(err)
	}
	if def.Pipeline.EarlySource != pipeline.EarlyTimer {
		t.Fatalf("the default run's --early-source is %s, want the timer (the control this test compares with)", def.Pipeline.EarlySource)
	}
	want := follow("default", def)

	reh, err := Parse([]string{"--source=" + writeLog(t, lines...), "--sink=bigquery:" + bqtest.Project + ".rehearsal", "--rehearse=flink"})
	if err != nil {
		t.Fatal(err)
	}
	if err := reh.Validate(); err != nil {
		t.Fatal(err)
	}
	got := follow("rehearsal", reh)

	if fmt.Sprint(values(got)) != fmt.Sprint(values(want)) || len(want) != 2 {
		t.Errorf("the rehearsal's current rows differ from the default run's:\n got %v\nwant %v", values(got), values(want))
	}
	for _, r := range got {
		if r.WindowStart == eleven && r.State != model.Early {
			t.Errorf("rehearsal: the open window's row is %s, want EARLY", r.State)
		}
	}
}

// waitForSinkRow polls a sink of any kind until, for each of oks, some
// changelog row satisfies it; it fails the test if the job ends first or a
// minute passes.
func waitForSinkRow(t *testing.T, job *backgroundRun, spec sink.Spec, what string, oks ...func(model.Row) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var (
		seen    []model.Row
		readErr error
	)
	for time.Now().Before(deadline) {
		if job.ended() {
			job.fail(t, what+": the job ended first")
		}
		ctx := context.Background()
		db, ok, err := sink.OpenReader(ctx, spec)
		if err == nil && !ok {
			err = fmt.Errorf("no sink yet")
		}
		if readErr = err; err == nil {
			seen, readErr = sinktest.ChangelogRows(ctx, db)
			db.Close()
			if !slices.ContainsFunc(oks, func(ok func(model.Row) bool) bool { return !slices.ContainsFunc(seen, ok) }) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var b strings.Builder
	for _, r := range seen {
		fmt.Fprintf(&b, "  %s\n", r.Key())
	}
	job.fail(t, fmt.Sprintf("no %s within a minute (last read: %v); the changelog holds:\n%s", what, readErr, b.String()))
}

// TestRehearseRefusals: --rehearse runs only on prism and names a runner
// the capability table knows; a rehearsal of a runner whose check the
// pipeline fails is refused as that submission would be.
func TestRehearseRefusals(t *testing.T) {
	log := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	reset := runnerFlags(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rehearse=flnk"}, "launch: --rehearse=flnk: not a runner the capability table knows (flink, universal, dataflow, spark, prism)"},
		{[]string{"--rehearse=flink", "--runner=universal", "--endpoint=localhost:1", "--shared-filesystem"}, `launch: --rehearse=flink runs on prism what flink would be sent: it needs --runner=prism, got "universal"`},
		{[]string{"--rehearse=flink", "--early-source=timer", "--follow"}, "launch: --rehearse=flink: the flink runner lacks processing-time timers"},
	} {
		reset()
		args := append([]string{"--source=" + log, "--sink=sqlite:" + t.TempDir() + "/r.db"}, tc.args...)
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		if code != ExitUsage || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestRehearseFlinkSealsNothingAtTheStop: Flink's job server reports no
// metrics while a job runs, so on Flink a graceful stop settles on a guess
// and seals nothing; --rehearse=flink used prism's live counters in the
// stop and sealed there. A follower whose 10:00 and 11:00 windows are FINAL
// (lateness 1m) and whose first file is read seals its point at the stop
// on prism (the control), none when rehearsing Flink.
func TestRehearseFlinkSealsNothingAtTheStop(t *testing.T) {
	for _, rehearse := range []string{"", "flink"} {
		o := options(t, writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100")))
		o.Rehearse, o.Follow, o.ProgressEvery, o.QuietPeriod = rehearse, true, 0, 500*time.Millisecond
		o.Pipeline.Triggers.Early, o.Pipeline.Triggers.AllowedLateness = 0, time.Minute
		o.Pipeline.EarlySource, o.Pipeline.DedupOrder = pipeline.EarlySourceFor(o.profileRunner()), pipeline.DedupOrderFor(o.profileRunner())
		o.RunToken = fmt.Sprintf("rehearse-%s-%d", rehearse, time.Now().UnixNano())
		appendFile(t, o.Source, "000002.jsonl", purchase("B", "2026-11-04T11:30:00Z", "u2", "50"))
		appendFile(t, o.Source, "000003.jsonl", purchase("C", "2026-11-04T12:30:00Z", "u3", "1"))
		j := runInBackground(t, o)
		waitUntil(t, time.Minute, "the first file read and a FINAL row", func() bool {
			if j.ended() {
				j.fail(t, "the follower ended by itself")
			}
			return checkpointsReach(t, o.Sink, o.RunToken, map[string]string{"p0": "000001.jsonl"}) && holdsFinal(o.Sink)
		})
		j.stopAndWait(t, time.Minute)
		if sealed := resumePointsOf(t, o.Sink); (len(sealed) == 1) != (rehearse == "") {
			t.Errorf("--rehearse=%q: the graceful stop sealed %+v; want one point on prism, none rehearsing Flink", rehearse, sealed)
		}
	}
}
