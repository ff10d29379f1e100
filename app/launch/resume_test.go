package launch

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func TestChooseResume(t *testing.T) {
	cp := func(p, f string, maxValid int64) model.Checkpoint {
		return model.Checkpoint{Partition: p, File: f, MaxValid: maxValid}
	}
	cps := []model.Checkpoint{
		cp("p0", "a", model.NoWatermark), cp("p0", "b", 50), cp("p0", "c", 99), cp("p0", "d", 100), cp("p0", "e", 150),
		cp("p1", "a", 100),
		cp("p2", "a", 10), cp("p2", "b", 20),
		cp("p3", "x", 10),
	}
	// p2 is sealed at b already and p3 at y (later than x): a resume point
	// never moves back.
	sealed := []model.Checkpoint{cp("p2", "b", 20), cp("p3", "y", 30)}
	got := chooseResume(cps, 100, sealed)
	if want := []model.Checkpoint{cp("p0", "c", 99)}; !slices.Equal(got, want) {
		t.Errorf("chooseResume = %+v, want %+v (the last checkpoint strictly below the horizon, past the sealed point)", got, want)
	}
	if got, want := chooseResume(cps, 100, nil), []model.Checkpoint{cp("p0", "c", 99), cp("p2", "b", 20), cp("p3", "x", 10)}; !slices.Equal(got, want) {
		t.Errorf("chooseResume without sealed points = %+v, want %+v", got, want)
	}

	po := pipeline.Defaults() // 1h windows, 24h lateness, retention 25h, bound 10m
	h := int64(time.Hour / time.Millisecond)
	if _, ok := resumeHorizon(0, false, 0, false, po); ok {
		t.Error("a sink without FINAL rows proves nothing, yet a horizon was set")
	}
	if got, ok := resumeHorizon(100*h, true, 0, false, po); !ok || got != 100*h+24*h-25*h-h/6 {
		t.Errorf("horizon = %d, want FINAL end + lateness - retention - bound", got)
	}
	if got, _ := resumeHorizon(100*h, true, 90*h, true, po); got != 90*h {
		t.Errorf("horizon = %d, want no later than the earliest open window (%d)", got, 90*h)
	}
}

// TestSealDue is step 2 of the sealer: every record judged, and the sink's
// write counters still for the quiet period counted from the later of their
// last change and the candidate's read.
func TestSealDue(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	q := 2 * time.Second
	for _, c := range []struct {
		name             string
		cand, changed    time.Duration // after t0
		now              time.Duration
		drained, wantDue bool
	}{
		{"quiet since the candidate", 0, -time.Minute, q, true, true},
		{"not quiet long enough", 0, -time.Minute, q - time.Millisecond, true, false},
		{"a write after the candidate restarts the wait", 0, time.Second, q + time.Second - time.Millisecond, true, false},
		{"quiet after that write", 0, time.Second, q + time.Second, true, true},
		{"records in flight", 0, -time.Minute, time.Hour, false, false},
	} {
		if got := sealDue(t0.Add(c.cand), t0.Add(c.changed), t0.Add(c.now), q, c.drained); got != c.wantDue {
			t.Errorf("%s: sealDue = %v, want %v", c.name, got, c.wantDue)
		}
	}
}

// TestSeedBound is the rule for which windows' sink rows a restarted run's
// revision step loads: from the window holding min(MaxValid) - bound -
// lateness of the resumed partitions, never above the earliest open window,
// and every row as soon as one partition can reach any window.
func TestSeedBound(t *testing.T) {
	po := pipeline.Defaults() // 1h windows, 24h lateness, bound 10m
	h := int64(time.Hour / time.Millisecond)
	m := int64(time.Minute / time.Millisecond)
	cp := func(p string, maxValid int64) model.Checkpoint {
		return model.Checkpoint{Partition: p, File: "f", MaxValid: maxValid}
	}
	parts := []string{"p0", "p1"}
	resume := []model.Checkpoint{cp("p0", 100*h+30*m), cp("p1", 120*h)}

	// p0's watermark is restored to 100h20m: its windows ending at or
	// before 76h20m are closed for it (rule (a)); [76h, 77h) is not.
	got := seedBound(resume, parts, 0, false, po)
	if want := (sink.SeedBound{Bounded: true, StartFrom: 76 * h}); got != want {
		t.Errorf("seedBound = %+v, want %+v", got, want)
	}
	// Check the rule against the too-late verdict itself: the first window
	// not closed at p0's restored watermark is the first one loaded.
	w := 100*h + 30*m - po.Watermark.OutOfOrderBound.Milliseconds()
	if !po.Triggers.Closed(got.StartFrom-h, w) || po.Triggers.Closed(got.StartFrom, w) {
		t.Errorf("bound %d: want the window before it closed at watermark %d and its own open", got.StartFrom, w)
	}
	// A watermark exactly on a window's close: that window is closed too.
	exact := []model.Checkpoint{cp("p0", 100*h+10*m), cp("p1", 120*h)}
	if got := seedBound(exact, parts, 0, false, po); got.StartFrom != 76*h {
		t.Errorf("bound at an exact close = %d, want %d", got.StartFrom, 76*h)
	}
	// An open window earlier than that keeps its rows loaded.
	if got := seedBound(resume, parts, 70*h+0, true, po); got.StartFrom != 70*h {
		t.Errorf("bound with an open window at 70h = %d, want %d", got.StartFrom, 70*h)
	}
	if got := seedBound(resume, parts, 90*h, true, po); got.StartFrom != 76*h {
		t.Errorf("bound with an open window at 90h = %d, want %d", got.StartFrom, 76*h)
	}
	// Every row: a partition read from its start, one resumed without a
	// watermark, no partitions, nothing resumed.
	for name, c := range map[string][]model.Checkpoint{
		"p1 from its start":      {cp("p0", 100*h)},
		"p1 without watermark":   {cp("p0", 100*h), cp("p1", model.NoWatermark)},
		"nothing resumed":        nil,
		"a partition not listed": {cp("p0", 100*h), cp("p2", 100*h)},
	} {
		if got := seedBound(c, parts, 0, false, po); got.Bounded {
			t.Errorf("%s: seedBound = %+v, want every row", name, got)
		}
	}
	if got := seedBound(nil, nil, 0, false, po); got.Bounded {
		t.Errorf("no partitions: seedBound = %+v, want every row", got)
	}
	// Other settings move it: 2h lateness, 30m bound, 15m windows.
	po.Triggers.AllowedLateness, po.Watermark.OutOfOrderBound, po.Triggers.Window = 2*time.Hour, 30*time.Minute, 15*time.Minute
	if got := seedBound(resume, parts, 0, false, po); got.StartFrom != 98*h {
		t.Errorf("seedBound with 2h lateness, 30m bound, 15m windows = %d, want %d (100h30m - 30m - 2h)", got.StartFrom, 98*h)
	}
}

// restartFigures is what a restart after a graceful stop read, against a
// clean replay of the whole log.
type restartFigures struct {
	total, prefix, added int64 // lines of the whole log, of the part read before the stop, of the part added after it
	restartRead          int64 // lines the restart read (re-read + added)
	clean, restart       time.Duration
	restartCounts        metrics.Counts
	sink                 string // the restarted run's SQLite file
}

// restartHooks let a scenario change the log and the sink on the way.
type restartHooks struct {
	// log is called with the whole log's folder before any run.
	log func(dir string)
	// stopped is called with the sink and the live folder (all files in)
	// after the graceful stop, before the restart.
	stopped func(spec sink.Spec, live string)
	// injected says a row was put into the sink by stopped: it is left out
	// of the comparison with the clean run.
	injected func(model.Row) bool
	// kill runs the follower as the launch binary and SIGKILLs it once it
	// has sealed a resume point for every partition (while it runs, at a
	// quiet moment), instead of stopping it gracefully.
	kill bool
}

// restartScenario generates a log of `days` days of event time in 4
// partitions (hourly files), replays it whole into one sink (the clean
// run), and into another: --follow over all but its last day, a graceful
// stop once every file has been read, then the last day added and a
// bounded replay on the same sink. It checks that both sinks hold the same
// rows and audit rows.
func restartScenario(t testing.TB, events, days int, h restartHooks) restartFigures {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	c := oracle.BenchLog(events)
	c.Span = time.Duration(days) * 24 * time.Hour
	c.FilesPerPartition = days * 24
	if _, err := gen.Write(full, c); err != nil {
		t.Fatal(err)
	}
	if h.log != nil {
		h.log(full)
	}
	parts, err := rawlog.ListPartitions(full)
	if err != nil {
		t.Fatal(err)
	}
	// The live log gets each partition's files but the last day's.
	live := filepath.Join(dir, "live")
	var fig restartFigures
	var rest [][2]string // [source, target] copied after the stop
	// A follower stays on a partition's newest file (it may still grow), so
	// the file before it is the last one it reports read completely.
	lastDone := map[string]string{}
	for _, p := range parts {
		files, err := rawlog.ListFiles(full, p)
		if err != nil {
			t.Fatal(err)
		}
		cut := len(files) - len(files)/days
		for i, f := range files {
			src, dst := filepath.Join(full, p, f), filepath.Join(live, p, f)
			n := lineCount(t, src)
			fig.total += n
			if i >= cut {
				rest = append(rest, [2]string{src, dst})
				fig.added += n
				continue
			}
			fig.prefix += n
			copyFile(t, src, dst)
			if i < cut-1 {
				lastDone[p] = f
			}
		}
	}

	quiet := func(o Options) Options { o.ProgressEvery = 0; return o }
	cleanOpts := quiet(options(t, full))
	began := time.Now()
	cleanSum, _ := run(t, cleanOpts)
	fig.clean = time.Since(began)

	o := quiet(options(t, live))
	o.Follow = true
	o.Pipeline.Triggers.Early = 0 // EARLY rows depend on processing time; the clean replay has none
	o.RunToken = fmt.Sprintf("follower-%d", time.Now().UnixNano())
	if h.kill {
		killFollower(t, o, len(parts))
	} else {
		j := runInBackground(t, o)
		waitUntil(t, 3*time.Minute, "every live file but the newest read", func() bool {
			if j.ended() {
				j.fail(t, "the follower ended by itself")
			}
			return checkpointsReach(t, o.Sink, o.RunToken, lastDone) && holdsFinal(o.Sink)
		})
		j.stopAndWait(t, time.Minute)
		// The stop settled: the follower sealed a resume point per partition.
		if sealed := resumePointsOf(t, o.Sink); len(sealed) != len(parts) {
			t.Errorf("after the graceful stop the sink holds resume points %+v, want one per partition %v", sealed, parts)
		}
	}

	for _, r := range rest {
		copyFile(t, r[0], r[1])
	}
	if h.stopped != nil {
		h.stopped(o.Sink, live)
	}
	ro := quiet(options(t, live))
	ro.Sink = o.Sink
	began = time.Now()
	restarted, _ := run(t, ro)
	fig.restart = time.Since(began)
	fig.restartRead = restarted.Counts.Read
	fig.restartCounts = restarted.Counts
	fig.sink = o.Sink.Path

	want, got := readAll(t, cleanOpts.Sink.Path), readSpec(t, o.Sink)
	if h.injected != nil {
		got.current = slices.DeleteFunc(got.current, h.injected)
	}
	if !slices.Equal(values(got.current), values(want.current)) {
		t.Errorf("rows after stop and restart differ from a clean run:\n got %v\nwant %v", values(got.current), values(want.current))
	}
	checkMonotone(t, got.changelog)
	if !maps.Equal(got.audit, want.audit) {
		t.Errorf("audit rows after stop and restart %v, clean run %v", got.audit, want.audit)
	}
	if cleanSum.Counts.Read != fig.total {
		t.Errorf("the clean run read %d lines of %d", cleanSum.Counts.Read, fig.total)
	}
	return fig
}

// TestRestartReadsRetentionNotHistory is SPEC §8's restart bar on the
// embedded runner: after a graceful stop, a restart re-reads about
// retention + bounds of the log (here 25h + 1h + 10m of 9 days), not the
// history, and the rows equal a clean run's.
func TestRestartReadsRetentionNotHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 10-day log three times")
	}
	fig := restartScenario(t, 50_000, 10, restartHooks{})
	reread := fig.restartRead - fig.added
	t.Logf("log %d lines; the restart re-read %d of the %d read before the stop (%.1f%%), plus %d new; clean replay %v, restart %v",
		fig.total, reread, fig.prefix, 100*float64(reread)/float64(fig.prefix), fig.added, fig.clean.Round(time.Millisecond), fig.restart.Round(time.Millisecond))
	// 9 days read before the stop, ~27h of it needed again: about 12%, plus
	// the files whose span straddles the horizon.
	if reread <= 0 || reread > fig.prefix/5 {
		t.Errorf("the restart re-read %d of %d lines: want about (retention + bounds) of 9 days, at most a fifth", reread, fig.prefix)
	}
}

// TestRestartAfterKillReadsFromLastSeal: a follower killed with SIGKILL
// after it sealed resume points at a quiet moment (not at a stop) restarts
// from them: it re-reads about the retention, and the rows and audit rows
// equal a clean run's. The killed run's later checkpoints are not used.
func TestRestartAfterKillReadsFromLastSeal(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 10-day log three times")
	}
	fig := restartScenario(t, 50_000, 10, restartHooks{kill: true})
	reread := fig.restartRead - fig.added
	t.Logf("log %d lines; after the kill the restart re-read %d of the %d lines before it (%.1f%%), plus %d new",
		fig.total, reread, fig.prefix, 100*float64(reread)/float64(fig.prefix), fig.added)
	if reread <= 0 || reread > fig.prefix/5 {
		t.Errorf("the restart re-read %d of %d lines: want about (retention + bounds) of 9 days, at most a fifth", reread, fig.prefix)
	}
}

// TestRestartReadsRetentionNotHistoryBigQuery is the restart bar with the
// BigQuery sink (the emulator): the workers' checkpoints and the sealed
// resume points live in the dataset. A replay of 3 days of log seals its
// points when it finishes; a second replay of the same log into the same
// dataset resumes from them and leaves the rows and audit rows as a clean
// run's. A finished replay has closed every window (its watermark reached
// the end of time), so the resume horizon is the last FINAL window's end +
// lateness - retention - bound: the second replay re-reads about the last
// 70 minutes of each partition. (A followed run stopped
// gracefully is the SQLite scenario's: the emulator keeps a lock when a
// cancelled job aborts an append, and then hangs every later query.)
func TestRestartReadsRetentionNotHistoryBigQuery(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 3-day log three times")
	}
	bqtest.Start(t)
	dir := t.TempDir()
	c := oracle.BenchLog(1_000) // the emulator is slow with many rows
	c.Span, c.FilesPerPartition = 3*24*time.Hour, 3*24
	if _, err := gen.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	clean := options(t, dir)
	clean.ProgressEvery = 0
	cleanSum, _ := run(t, clean)

	o := clean
	o.Sink = sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "restart"}
	first, _ := run(t, o)
	if sealed := resumePointsOf(t, o.Sink); len(sealed) != 4 {
		t.Fatalf("after the first replay the dataset holds resume points %+v, want one per partition", sealed)
	}
	began := time.Now()
	second, _ := run(t, o)
	took := time.Since(began)
	t.Logf("log %d lines; the second replay re-read %d (%.1f%%) in %v",
		first.Counts.Read, second.Counts.Read, 100*float64(second.Counts.Read)/float64(first.Counts.Read), took.Round(time.Millisecond))
	// About 1h10m + one hourly file of 72 hours per partition.
	if second.Counts.Read <= 0 || second.Counts.Read > first.Counts.Read*5/100 {
		t.Errorf("the second replay read %d of %d lines: want the last hour or two of each partition, at most 5%%", second.Counts.Read, first.Counts.Read)
	}
	if first.Counts.Read != cleanSum.Counts.Read {
		t.Errorf("the first replay read %d lines, the clean run %d", first.Counts.Read, cleanSum.Counts.Read)
	}
	want, got := readAll(t, clean.Sink.Path), readSpec(t, o.Sink)
	if !slices.Equal(values(got.current), values(want.current)) {
		t.Errorf("rows after the second replay differ from a clean run:\n got %v\nwant %v", values(got.current), values(want.current))
	}
	checkMonotone(t, got.changelog)
	if !maps.Equal(got.audit, want.audit) {
		t.Errorf("audit rows after the second replay %v, clean run %v", got.audit, want.audit)
	}
}

// killFollower runs o (a follower) as the launch binary, waits until it has
// sealed a resume point for each of n partitions while running, and
// SIGKILLs it.
func killFollower(t testing.TB, o Options, n int) {
	t.Helper()
	if o.Sink.Scheme != sink.SchemeSQLite {
		t.Fatalf("killFollower: sink %s: want a SQLite file", o.Sink)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), "--source="+o.Source, "--follow", "--early=0",
		"--sink=sqlite:"+o.Sink.Path, "--log-level=error")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitUntil(t, 3*time.Minute, "resume points sealed while the follower runs", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the follower ended by itself: %v\n%s", err, out.String())
		default:
		}
		return sealedNearHorizon(t, o, n)
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// sealedNearHorizon reports whether the sink holds a resume point for each
// of n partitions, each within two hours of the resume horizon its FINAL
// rows allow now: the follower sealed once it had read everything, not at
// an earlier pause.
func sealedNearHorizon(t testing.TB, o Options, n int) bool {
	if _, err := os.Stat(o.Sink.Path); err != nil {
		return false
	}
	ctx := context.Background()
	s, ok, err := sink.OpenProgress(ctx, o.Sink)
	if err != nil || !ok {
		return false
	}
	defer s.Close()
	points, err := s.ResumePoints(ctx)
	if err != nil || len(points) != n {
		return false
	}
	finalEnd, hasFinal, err := s.FinalHorizon(ctx)
	if err != nil {
		return false
	}
	openStart, hasOpen, err := s.EarliestOpenWindow(ctx)
	if err != nil {
		return false
	}
	h, ok := resumeHorizon(finalEnd, hasFinal, openStart, hasOpen, o.Pipeline)
	if !ok {
		return false
	}
	for _, p := range points {
		if p.MaxValid < h-2*time.Hour.Milliseconds() {
			return false
		}
	}
	return true
}

// BenchmarkRestartAfterGracefulStop reports, for a 10-day log of 200,000
// purchases, the lines a restart re-reads and its duration against a clean
// replay of the whole log:
//
//	go test ./app/launch -run X -bench RestartAfterGracefulStop -benchtime 1x -count 3
func BenchmarkRestartAfterGracefulStop(b *testing.B) {
	for b.Loop() {
		fig := restartScenario(b, 200_000, 10, restartHooks{})
		b.ReportMetric(float64(fig.restartRead-fig.added), "lines_reread")
		b.ReportMetric(float64(fig.prefix), "lines_before_stop")
		b.ReportMetric(float64(fig.added), "lines_added")
		b.ReportMetric(fig.restart.Seconds(), "restart_s")
		b.ReportMetric(fig.clean.Seconds(), "full_replay_s")
	}
}

// checkpointsReach reports whether the sink holds a checkpoint of run for
// each partition's given file, i.e. the follower has read it completely.
func checkpointsReach(t testing.TB, spec sink.Spec, run string, last map[string]string) bool {
	ctx := context.Background()
	s, ok, err := sink.OpenProgress(ctx, spec)
	if err != nil || !ok {
		return false // not created yet
	}
	defer s.Close()
	cps, err := s.RunCheckpoints(ctx, run)
	if err != nil {
		return false
	}
	done := 0
	for _, c := range cps {
		if last[c.Partition] == c.File {
			done++
		}
	}
	return done == len(last)
}

// holdsFinal reports whether the sink holds a FINAL row: a restart resumes
// nothing before (it proves no window closed), and a small log can be read
// completely before the first one is written.
func holdsFinal(spec sink.Spec) bool {
	ctx := context.Background()
	s, ok, err := sink.OpenReader(ctx, spec)
	if err != nil || !ok {
		return false
	}
	defer s.Close()
	_, ok, err = s.FinalHorizon(ctx)
	return err == nil && ok
}

// resumePointsOf returns the sink's sealed resume points.
func resumePointsOf(t testing.TB, spec sink.Spec) []model.Checkpoint {
	t.Helper()
	ctx := context.Background()
	s, ok, err := sink.OpenProgress(ctx, spec)
	if err != nil || !ok {
		t.Fatalf("open %s: ok %v, err %v", spec, ok, err)
	}
	defer s.Close()
	points, err := s.ResumePoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return points
}

func waitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lineCount(t testing.TB, path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for l := range strings.SplitSeq(string(data), "\n") {
		if !rawlog.Blank([]byte(l)) {
			n++
		}
	}
	return n
}

func copyFile(t testing.TB, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRestartSeedsReachableWindowsOnly: a sink holding 100,000 FINAL rows
// of old windows (a long history) besides a follower's rows; after a
// graceful stop, the restart's revision step loads only the rows of windows
// it can still reach (revision_seed_rows), none of the old ones, every row
// not yet FINAL; the rows equal a clean run's, the old rows stay as they
// were, and a record of an old FINAL window goes to too_late_events.
func TestRestartSeedsReachableWindowsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 4-day log three times")
	}
	const oldWindows, oldDims = 1_000, 100
	hour := int64(time.Hour / time.Millisecond)
	oldStart := ms("2025-01-01T00:00:00Z")
	isOld := func(r model.Row) bool { return strings.HasPrefix(r.Dims, `{"old":`) }
	var injected []model.Row
	for w := range int64(oldWindows) {
		for d := range oldDims {
			injected = append(injected, model.Row{WindowStart: oldStart + w*hour, WindowEnd: oldStart + (w+1)*hour,
				Dims: fmt.Sprintf(`{"old":"%d"}`, d), RevenueMicros: 1_000_000, EventCount: 1, Revision: 3, State: model.Final, Writer: "stream"})
		}
	}
	// A record of the first old window, at the end of a partition's last
	// file: its partition's watermark is far past that window's close.
	const lateID = "old-window-record"
	lateLine := fmt.Sprintf(`{"event_id":%q,"event_time":"2025-01-01T00:30:00Z","user_id":"u-old","amount":"1.00"}`+"\n", lateID)

	var (
		loaded       []model.Row
		open, stored int
	)
	ctx := context.Background()
	fig := restartScenario(t, 4_000, 4, restartHooks{
		log: func(dir string) {
			parts, err := rawlog.ListPartitions(dir)
			if err != nil {
				t.Fatal(err)
			}
			files, err := rawlog.ListFiles(dir, parts[0])
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, parts[0], files[len(files)-1]), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(lateLine); err != nil {
				t.Fatal(err)
			}
		},
		stopped: func(spec sink.Spec, live string) {
			db, err := sqlite.Open(context.Background(), spec.Path)
			if err != nil {
				t.Fatal(err)
			}
			before, err := sinktest.CurrentRows(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			stored = len(before)
			for _, r := range before {
				if r.State != model.Final {
					open++
				}
			}
			began := time.Now()
			if _, err := db.Write(ctx, sink.Batch{Rows: injected}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d old FINAL rows written in %v next to %d rows of the follower (%d not FINAL)", len(injected),
				time.Since(began).Round(time.Millisecond), stored, open)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// What the restart's revision step will load: the launcher's
			// rule on the same sink and folder (pruning checkpoints is
			// idempotent), read as the workers read it.
			_, bound, err := resumePoints(ctx, spec, live, options(t, live).Pipeline)
			if err != nil {
				t.Fatal(err)
			}
			if !bound.Bounded {
				t.Fatalf("every partition resumed, yet the seed is not bounded")
			}
			if loaded, err = sink.Published(ctx, spec, bound); err != nil {
				t.Fatal(err)
			}
			t.Logf("seed bound: %s", bound)
		},
		injected: isOld,
	})

	nOpen := 0
	for _, r := range loaded {
		if isOld(r) {
			t.Fatalf("the seed loaded an old row: %+v", r)
		}
		if r.State != model.Final {
			nOpen++
		}
	}
	if nOpen != open || len(loaded) >= stored {
		t.Errorf("the seed holds %d rows (%d not FINAL) of the follower's %d (%d not FINAL): want every open row and not the whole history",
			len(loaded), nOpen, stored, open)
	}
	seed := fig.restartCounts.Counters[string(metrics.RevisionSeedRows)]
	t.Logf("revision_seed_rows %d: %d rows per revision-step instance (of %d in the sink)", seed, len(loaded), stored+len(injected))
	// Each revision-step instance loads what is reachable when its Setup
	// runs: an instance prism starts later in the run also sees the rows
	// the run wrote by then (CI on cffa2e7: 126 = 51 + 75), so the sum is
	// no multiple of anything. What must hold: some rows, and never the
	// history (an instance that loaded it would add 100,000 alone).
	if seed < int64(len(loaded)) || seed >= int64(len(injected)) {
		t.Errorf("revision_seed_rows = %d, want at least the %d reachable rows and far fewer than the %d old ones", seed, len(loaded), len(injected))
	}

	db, err := sqlite.Open(context.Background(), fig.sink)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after, err := sinktest.CurrentRows(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]model.Row{}
	for _, r := range after {
		if isOld(r) {
			kept[r.Key()] = r
		}
	}
	for _, r := range injected {
		if kept[r.Key()] != r {
			t.Fatalf("old row %s is %+v after the restart, want %+v as written", r.Key(), kept[r.Key()], r)
		}
	}
	if len(kept) != len(injected) {
		t.Errorf("%d old rows after the restart, want the %d written", len(kept), len(injected))
	}
	late, err := sinktest.TooLate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(late, func(r model.TooLate) bool { return r.EventID == lateID }) {
		t.Errorf("the record of an old FINAL window is not in too_late_events")
	}
}

// TestChooseResumeFileReadOutOfOrder: a file that appeared late in lexical
// order ("a", after "b" and "c" were read) is read after them, so its
// checkpoint carries the partition's later MaxValid while sorting first. A
// restart counts every file below its resume point as read (the point is the
// reader's floor), so a point at "c" would skip "a", whose events lie past
// the horizon (open windows, ids dedup still needs): the point must be a
// prefix of the partition's files all below the horizon.
func TestChooseResumeFileReadOutOfOrder(t *testing.T) {
	cp := func(p, f string, maxValid int64) model.Checkpoint {
		return model.Checkpoint{Partition: p, File: f, MaxValid: maxValid}
	}
	// Read order b, c, a; sorted as the sinks return them.
	cps := []model.Checkpoint{cp("p0", "a", 150), cp("p0", "b", 10), cp("p0", "c", 20), cp("p1", "x", 10), cp("p1", "y", 20)}
	if got, want := chooseResume(cps, 100, nil), []model.Checkpoint{cp("p1", "y", 20)}; !slices.Equal(got, want) {
		t.Errorf("chooseResume = %+v, want %+v (p0 has no point: a restart after b or c would skip a, read after them past the horizon)", got, want)
	}
	// Once a is below the horizon too, c covers every file below it.
	if got, want := chooseResume(cps, 200, nil), []model.Checkpoint{cp("p0", "c", 20), cp("p1", "y", 20)}; !slices.Equal(got, want) {
		t.Errorf("chooseResume = %+v, want %+v", got, want)
	}
	// A gap in the middle of the files: a point stops before it.
	cps = []model.Checkpoint{cp("p0", "a", 10), cp("p0", "b", 150), cp("p0", "c", 20)}
	if got, want := chooseResume(cps, 100, nil), []model.Checkpoint{cp("p0", "a", 10)}; !slices.Equal(got, want) {
		t.Errorf("chooseResume = %+v, want %+v", got, want)
	}
}
