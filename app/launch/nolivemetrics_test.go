package launch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// captureWarnings tees the process's log into a buffer for the rest of
// the test.
func captureWarnings(t *testing.T) *lockedBuffer {
	buf := &lockedBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.MultiWriter(buf, os.Stderr), &slog.HandlerOptions{Level: slog.LevelWarn})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

// linesWith returns the log's lines that contain s.
func linesWith(log, s string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestNoLiveMetricsSealsNothing is issue #24's "progress only where it is
// proven": a runner whose job service reports no metrics while a job runs
// (runnertest.NoLiveMetrics, in front of prism's job server, answers
// GetJobMetrics as Beam Java's job server does for Flink) gets no resume
// point sealed from a run it cannot prove, says so in one line, and a
// restart re-reads from the last proven point and converges to a clean
// run's rows.
//
// A 4-day log in 4 partitions, fed to one sink in three parts: a follower
// over days 1-2 through the proxy with live metrics passed through (the
// negative control: it seals a point per partition at its graceful stop);
// a follower over day 3 through the proxy hiding them (it seals nothing:
// the points stay exactly the first run's, and one line says why and where
// a restart resumes); then day 4 and a bounded replay on the same sink,
// which re-reads exactly the files after the first run's points and leaves
// the rows and audit rows of a clean replay of the whole log.
func TestNoLiveMetricsSealsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 4-day log four times")
	}
	js, proxy := flinkLikeJobServer(t)

	const days = 4
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	c := oracle.BenchLog(20_000)
	c.Span, c.FilesPerPartition = days*24*time.Hour, days*24
	if _, err := gen.Write(full, c); err != nil {
		t.Fatal(err)
	}
	parts, err := rawlog.ListPartitions(full)
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live")
	files := map[string][]string{}
	lines := map[string]int64{} // partition/file: lines
	var total int64
	for _, p := range parts {
		if files[p], err = rawlog.ListFiles(full, p); err != nil {
			t.Fatal(err)
		}
		for _, f := range files[p] {
			n := lineCount(t, filepath.Join(full, p, f))
			lines[p+"/"+f], total = n, total+n
		}
	}
	// feed copies each partition's files of days [from, to) into the live
	// folder and returns, per partition, the last file a follower reports
	// read completely (the one before its newest).
	feed := func(from, to int) map[string]string {
		last := map[string]string{}
		for _, p := range parts {
			fs := files[p]
			lo, hi := len(fs)*from/days, len(fs)*to/days
			for _, f := range fs[lo:hi] {
				copyFile(t, filepath.Join(full, p, f), filepath.Join(live, p, f))
			}
			last[p] = fs[hi-2]
		}
		return last
	}

	quiet := func(o Options) Options { o.ProgressEvery = 0; return o }
	cleanOpts := quiet(options(t, full))
	cleanSum, _ := run(t, cleanOpts)
	if cleanSum.Counts.Read != total {
		t.Fatalf("the clean run read %d lines of %d", cleanSum.Counts.Read, total)
	}

	// --runner=prism --endpoint=PROXY: prism's job server (so its
	// workarounds apply), reached through the proxy; LOOPBACK workers.
	endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
	t.Cleanup(func() { *jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, env })
	*jobopts.Endpoint, *jobopts.EnvironmentType = proxy.Endpoint, "LOOPBACK"
	sink := options(t, live).Sink
	// follow runs a follower until it has read every live file but the
	// newest and, when judged > 0, until prism's job server itself (not
	// the proxy) shows that many records read and judged: without live
	// metrics the graceful stop cannot see records in flight, and a
	// cancel that catches some (a loaded machine) would break the final
	// figures' conservation, which this test checks.
	follow := func(token string, last map[string]string, judged int64) *Summary {
		o := quiet(options(t, live))
		o.Sink, o.Follow, o.RunToken = sink, true, token
		o.Pipeline.Triggers.Early = 0    // EARLY rows depend on processing time; the clean replay has none
		name := "nolivemetrics-" + token // how judgedAt finds the job
		*jobopts.JobName = name
		defer func() { *jobopts.JobName = "" }()
		j := runInBackground(t, o)
		waitUntil(t, 3*time.Minute, "every live file but the newest read", func() bool {
			if j.ended() {
				j.fail(t, "the follower ended by itself")
			}
			return checkpointsReach(t, sink, token, last) && holdsFinal(sink) &&
				(judged == 0 || judgedAt(js.Endpoint, name) == judged)
		})
		sum, _ := j.stopAndWait(t, time.Minute)
		return sum
	}

	// 1. Live metrics passed through: the stop settles on them and seals.
	proxy.PassThrough.Store(true)
	follow(fmt.Sprintf("proven-%d", time.Now().UnixNano()), feed(0, 2), 0)
	proven := resumePointsOf(t, sink)
	if len(proven) != len(parts) {
		t.Fatalf("negative control: with live metrics the follower sealed %+v, want a point per partition %v", proven, parts)
	}
	// after is how many lines of the files fed through day to a restart
	// from the first run's points reads.
	after := func(day int) int64 {
		var n int64
		for _, c := range proven {
			fs := files[c.Partition]
			for _, f := range fs[:len(fs)*day/days] {
				if f > c.File {
					n += lines[c.Partition+"/"+f]
				}
			}
		}
		return n
	}

	// 2. No live metrics: nothing sealed, one line.
	proxy.PassThrough.Store(false)
	warnings := captureWarnings(t)
	hidden := proxy.Hidden.Load()
	sum := follow(fmt.Sprintf("unproven-%d", time.Now().UnixNano()), feed(2, 3), after(3))
	if proxy.Hidden.Load() == hidden {
		t.Fatal("the proxy hid no metrics: the run proved nothing about them")
	}
	if got := resumePointsOf(t, sink); !slices.Equal(got, proven) {
		t.Errorf("without live metrics the follower moved the resume points:\n got %+v\nwant %+v (the first run's)", got, proven)
	}
	declined := linesWith(warnings.String(), "restart: resume points not sealed")
	if len(declined) != 1 {
		t.Fatalf("want one line saying no resume point was sealed, got %d:\n%s", len(declined), warnings.String())
	}
	for _, want := range []string{"committed counters", "a restart re-reads each partition from its last sealed point"} {
		if !strings.Contains(declined[0], want) {
			t.Errorf("the line %q does not say %q", declined[0], want)
		}
	}
	for _, c := range proven {
		if want := fmt.Sprintf("%s after %s (line %d)", c.Partition, c.File, c.Line); !strings.Contains(declined[0], want) {
			t.Errorf("the line %q does not name the point a restart resumes from, %q", declined[0], want)
		}
	}
	if !sum.Conserved {
		t.Errorf("the unproven follower's final figures: %s, not conserved", sum.Counts.Identity())
	}

	// 3. The rest of the log and a bounded replay on the same sink: it
	// re-reads every file after the first run's points, nothing less.
	feed(3, days)
	want := after(days)
	ro := quiet(options(t, live))
	ro.Sink = sink
	restarted, _ := run(t, ro)
	t.Logf("log %d lines; the restart read %d (after the proven points: %d)", total, restarted.Counts.Read, want)
	if restarted.Counts.Read != want {
		t.Errorf("the restart read %d lines, want the %d after the last proven points", restarted.Counts.Read, want)
	}
	if !restarted.Conserved {
		t.Errorf("restart: %s, not conserved", restarted.Counts.Identity())
	}
	// A finished job's final metrics are reported: its end is proven.
	if got := resumePointsOf(t, sink); len(got) != len(parts) || slices.Equal(got, proven) {
		t.Errorf("after the finished replay the sink holds resume points %+v, want new ones per partition", got)
	}
	wantState, got := readAll(t, cleanOpts.Sink.Path), readSpec(t, sink)
	if !slices.Equal(values(got.current), values(wantState.current)) {
		t.Errorf("rows after the unproven run and the restart differ from a clean run:\n got %v\nwant %v", values(got.current), values(wantState.current))
	}
	checkMonotone(t, got.changelog)
	if !maps.Equal(got.audit, wantState.audit) {
		t.Errorf("audit rows %v, clean run %v", got.audit, wantState.audit)
	}
}

// judgedAt is how many records the job named name, running at prism's
// job server endpoint, has read, once every one of them has its verdict in
// the committed counters; -1 while some are in flight or the job is not
// running yet.
func judgedAt(endpoint, name string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jf := &jobFigures{name: name, endpoint: endpoint}
	defer jf.close()
	if m := jf.metrics(ctx, 0); m != nil {
		if r := readingOf(*m); r.proves() {
			return r.Read
		}
	}
	return -1
}

// TestNoLiveMetricsProof is the sealer's rule on its own: readings that
// prove nothing (attempted zeros, as a runner without live metrics gives,
// or committed zeros) never seal; committed counters that saw records, all
// judged, do (the negative control). A runner whose profile has no live
// metrics seals nothing while it runs and says so once, with where a
// restart resumes.
func TestNoLiveMetricsProof(t *testing.T) {
	h := time.Hour.Milliseconds()
	cp := func(p, f string, maxValid int64) model.Checkpoint {
		return model.Checkpoint{Partition: p, File: f, MaxValid: maxValid, Run: "r", Line: 7}
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	walk := func(s *sealer, r reading) {
		for _, d := range []time.Duration{0, time.Second, 5 * time.Second, 9 * time.Second} {
			s.observe(context.Background(), t0.Add(d), r)
		}
	}
	for _, tc := range []struct {
		name  string
		r     reading
		seals int
	}{
		{"attempted zeros", reading{}, 0},
		{"attempted figures", reading{Counts: metrics.Counts{Read: 100, Counted: 100}}, 0},
		{"committed zeros", reading{committed: true}, 0},
		{"committed, in flight", reading{Counts: metrics.Counts{Read: 100, Counted: 99}, committed: true}, 0},
		{"committed, all judged", reading{Counts: metrics.Counts{Read: 100, Counted: 100}, committed: true}, 1},
	} {
		store := &fakeProgress{checkpoints: []model.Checkpoint{cp("p0", "b", 20*h)}, finalEnd: 30 * h}
		s := newSealer(sink.Spec{}, "r", Defaults().Pipeline, 2*time.Second, 10*time.Second, "prism", nil)
		s.store = store
		walk(s, tc.r)
		if store.seals != tc.seals {
			t.Errorf("%s: %d seals, want %d", tc.name, store.seals, tc.seals)
		}
	}

	warnings := captureWarnings(t)
	for _, runner := range []string{"flink", "universal", "dataflow"} {
		store := &fakeProgress{checkpoints: []model.Checkpoint{cp("p0", "b", 20*h)}, finalEnd: 30 * h}
		s := newSealer(sink.Spec{}, "r", Defaults().Pipeline, 2*time.Second, 10*time.Second, runner, []model.Checkpoint{cp("p0", "a", 10*h)})
		s.store = store
		walk(s, reading{Counts: metrics.Counts{Read: 100, Counted: 100}, committed: true})
		if err := s.final(context.Background(), noLiveProof(runner)); err != nil {
			t.Fatal(err)
		}
		if store.seals != 0 {
			t.Errorf("--runner=%s: %d seals while the job ran, want none", runner, store.seals)
		}
	}
	declined := linesWith(warnings.String(), "restart: resume points not sealed")
	if len(declined) != 3 {
		t.Fatalf("want one line per run, got:\n%s", warnings.String())
	}
	for i, runner := range []string{"flink", "universal", "dataflow"} {
		for _, want := range []string{"the " + runner + " runner gives no live metrics", "while the job runs", "p0 after a (line 7)"} {
			if !strings.Contains(declined[i], want) {
				t.Errorf("--runner=%s: the line %q does not say %q", runner, declined[i], want)
			}
		}
	}
	if noLiveProof("prism") != "" || noLiveProof("") != "" {
		t.Errorf("prism has live metrics: %q", noLiveProof("prism"))
	}
}

// TestNoLiveMetricsSummaryAndStop: a run whose runner reported no counters
// does not claim conservation (an all-zero identity would pass the check),
// and a graceful stop is refused on Dataflow only, where the launcher
// cannot stop the job.
func TestNoLiveMetricsSummaryAndStop(t *testing.T) {
	for _, unchecked := range []bool{false, true} {
		s := &Summary{Conserved: !unchecked, Identity: metrics.Counts{}.Identity(), unchecked: unchecked}
		var b bytes.Buffer
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		got := linesWith(b.String(), "conservation:")
		want := ": holds"
		if unchecked {
			want = ": NOT CHECKED: the runner reported no counters"
		}
		if len(got) != 1 || !strings.HasSuffix(got[0], want) {
			t.Errorf("unchecked %v: conservation line %q, want it to end in %q", unchecked, got, want)
		}
	}
	for runner, refused := range map[string]bool{"dataflow": true, "DataflowRunner": true, "prism": false, "": false, "flink": false, "universal": false} {
		if got := stopRefusal(runner) != ""; got != refused {
			t.Errorf("--runner=%q: stop refused %v, want %v", runner, got, refused)
		}
	}
}
