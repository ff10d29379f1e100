package launch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/testing/sinktest"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/watermark"
)

// putFile writes a file into a partition of a source folder the way a
// producer does (temporary name, then renamed in), creating the partition
// folder if needed. content is written as is.
func putFile(t *testing.T, dir, partition, name, content string) {
	t.Helper()
	pdir := filepath.Join(dir, partition)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(pdir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(pdir, name)); err != nil {
		t.Fatal(err)
	}
}

// rowsOf is a window's changelog rows, in revision order.
func rowsOf(rows []model.Row, start string) []model.Row {
	var out []model.Row
	for _, r := range rows {
		if r.WindowStart == ms(start) {
			out = append(out, r)
		}
	}
	return out
}

// followOptions are a follower's options for the idle scenarios of issue
// #12: --window=1h --ooo-bound=1m --allowed-lateness=1h --idle-timeout=3s,
// no EARLY rows (they would depend on the machine's speed).
func followOptions(t *testing.T, dir string) Options {
	o := options(t, dir)
	o.Follow = true
	o.Pipeline.Triggers.Early = 0
	o.Pipeline.Triggers.AllowedLateness = time.Hour
	o.Pipeline.Watermark.OutOfOrderBound = time.Minute
	o.Pipeline.Watermark.IdleTimeout = 3 * time.Second
	o.PollInterval = 100 * time.Millisecond
	o.QuietPeriod = 500 * time.Millisecond
	return o
}

// feed keeps partition p writing one event a tick from event time from on,
// so that it stays active, until the test ends.
func feed(t *testing.T, dir, p, from string) {
	stop, fed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fed)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			at := time.UnixMilli(ms(from)).UTC().Add(time.Duration(i) * time.Second).Format(time.RFC3339)
			putFile(t, dir, p, fmt.Sprintf("%06d.jsonl", i+1), purchase(fmt.Sprintf("k%d", i), at, "u", "0")+"\n")
		}
	}()
	t.Cleanup(func() { close(stop); <-fed })
}

// idOnOtherShard returns an id starting with prefix whose dedup shard holds
// none of taken.
func idOnOtherShard(t *testing.T, prefix string, taken ...string) string {
	t.Helper()
	used := map[int]bool{}
	for _, id := range taken {
		used[transforms.ShardOf(id, Defaults().Pipeline.WithDefaults().DedupShards)] = true
	}
	for i := range 1000 {
		if id := fmt.Sprintf("%s-%d", prefix, i); !used[transforms.ShardOf(id, Defaults().Pipeline.WithDefaults().DedupShards)] {
			return id
		}
	}
	t.Fatalf("no id %s-N avoids the shards of %v", prefix, taken)
	return ""
}

// readerWatch follows a running job's folder readers through the gauges each
// reader call sets as it hands its partition's watermark to the runner
// (revenue/partition_idle_<p> and revenue/watermark_lag_ms_<p>), read
// committed from the job service: a committed value was reported by a call
// that has ended.
type readerWatch struct{ jf *jobFigures }

// watchReaders names the next job the test runs so that its gauges can be
// read while it runs.
func watchReaders(t *testing.T) *readerWatch {
	name := fmt.Sprintf("idle-test-%d", time.Now().UnixNano())
	*jobopts.JobName = name
	jf := &jobFigures{name: name}
	t.Cleanup(func() { *jobopts.JobName = ""; jf.close() })
	return &readerWatch{jf: jf}
}

// counter is the job's counter n as the job service reports it (0: not yet).
func (w *readerWatch) counter(n metrics.Name) int64 {
	m := w.jf.metrics(context.Background(), liveLook)
	if m == nil {
		return 0
	}
	named, _, _ := metrics.Named(*m, metrics.Namespace)
	return named[string(n)]
}

// readerReport is what a partition's reader reported in its last call that
// has ended.
type readerReport struct {
	at        time.Time // when that call set the gauges
	idle      bool
	watermark int64 // the partition's reported watermark; model.NoWatermark: none yet
}

func (w *readerWatch) reports() map[string]readerReport {
	m := w.jf.metrics(context.Background(), liveLook)
	if m == nil {
		return nil
	}
	// The latest committed value of each partition's two gauges.
	idle, lag := map[string]beammetrics.GaugeValue{}, map[string]beammetrics.GaugeValue{}
	for _, g := range m.AllMetrics().Gauges() {
		if g.Namespace() != metrics.Namespace {
			continue
		}
		for prefix, latest := range map[metrics.Name]map[string]beammetrics.GaugeValue{metrics.PartitionIdle(""): idle, metrics.WatermarkLag(""): lag} {
			if p, ok := strings.CutPrefix(g.Name(), string(prefix)); ok && g.Committed.Timestamp.After(latest[p].Timestamp) {
				latest[p] = g.Committed
			}
		}
	}
	out := map[string]readerReport{}
	for p, v := range idle {
		r := readerReport{at: v.Timestamp, idle: v.Value == 1, watermark: model.NoWatermark}
		if l, ok := lag[p]; ok {
			r.watermark = l.Timestamp.UnixMilli() - l.Value // the lag was measured when the gauge was set
		}
		out[p] = r
	}
	return out
}

// waitFor waits until cond holds for the readers' reports, and returns them.
func (w *readerWatch) waitFor(t *testing.T, what string, cond func(map[string]readerReport) bool) map[string]readerReport {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := w.reports()
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after a minute waiting for %s; the readers report %+v", what, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCalls waits until the reader of each of partitions has ended n calls
// that began after this one was made: calls that saw the folder, and the
// other partitions, as they are now. The reports' times tell the calls
// apart; the first report seen may come from a call that began before, hence
// n+1 reports. Reports missed between two looks make the wait longer, never
// shorter. It returns the last reports.
func (w *readerWatch) waitCalls(t *testing.T, n int, partitions ...string) map[string]readerReport {
	t.Helper()
	start := time.Now()
	seen, last := map[string]int{}, map[string]time.Time{}
	return w.waitFor(t, fmt.Sprintf("%d reader calls of %v", n, partitions), func(r map[string]readerReport) bool {
		done := true
		for _, p := range partitions {
			if at := r[p].at; at.After(start) && at.After(last[p]) {
				seen[p]++
				last[p] = at
			}
			done = done && seen[p] > n
		}
		return done
	})
}

// Case 1 and 2 of issue #12 with a real folder and --follow: p1 writes one
// event at 10:10 and goes quiet, p0 keeps producing and moves the watermark
// past 12:00, so [10:00, 11:00) gets its FINAL row with 3 events. p1 comes
// back: its 10:40 goes to too_late_events with its payload (the window stays
// FINAL with 3 events), its 11:50 opens [11:00, 12:00) with a LATE row, and
// its 11:55 is a LATE revision. The returning ids sit on dedup shards that
// hold no id of the closed window, which is how the 10:40 used to be lost.
func TestFollowIdlePartitionReturns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	putFile(t, dir, "p0", "000001.jsonl", purchase("a1", "2026-11-04T10:05:00Z", "u1", "100")+"\n"+
		purchase("a2", "2026-11-04T10:20:00Z", "u2", "25")+"\n")
	putFile(t, dir, "p1", "000001.jsonl", purchase("b1", "2026-11-04T10:10:00Z", "u3", "50")+"\n")
	o := followOptions(t, dir)
	readers := watchReaders(t)
	job := runInBackground(t, o)

	// p0 moves on once p1 has read b1 and reported its watermark (10:09);
	// p1 stays silent.
	readers.waitFor(t, "p1's watermark", func(r map[string]readerReport) bool {
		p1, ok := r["p1"]
		return ok && p1.watermark != model.NoWatermark
	})
	feed(t, dir, "p0", "2026-11-04T12:30:00Z")
	waitForRow(t, o.Sink.Path, "FINAL [10:00)", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.Final
	})

	back := idOnOtherShard(t, "b2", "a1", "a2", "b1")
	opens := idOnOtherShard(t, "b3", "a1", "a2", "b1")
	returning := purchase(back, "2026-11-04T10:40:00Z", "u4", "40")
	putFile(t, dir, "p1", "000002.jsonl", returning+"\n"+purchase(opens, "2026-11-04T11:50:00Z", "u5", "10")+"\n")
	waitForRow(t, o.Sink.Path, "the first row of [11:00)", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T11:00:00Z")
	})
	putFile(t, dir, "p1", "000003.jsonl", purchase("b4", "2026-11-04T11:55:00Z", "u6", "5")+"\n")
	waitForRow(t, o.Sink.Path, "the LATE revision of [11:00)", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T11:00:00Z") && r.EventCount == 2
	})

	sum, _ := job.stopAndWait(t, 30*time.Second)
	if !sum.Conserved || sum.Counts.AfterFinal != 0 || sum.Counts.TooLate != 1 {
		t.Errorf("conserved %v, invariant_data_after_final %d, too_late %d; want true, 0, 1\n%s",
			sum.Conserved, sum.Counts.AfterFinal, sum.Counts.TooLate, job.out.String())
	}
	changelog := sum.Changelog()
	assertRows(t, "[10:00) rows", rowsOf(changelog, "2026-11-04T10:00:00Z"), []model.Row{
		row("2026-11-04T10:00:00Z", time.Hour, "175", 3, 1, model.OnTime),
		row("2026-11-04T10:00:00Z", time.Hour, "175", 3, 2, model.Final),
	})
	assertRows(t, "[11:00) rows", rowsOf(changelog, "2026-11-04T11:00:00Z"), []model.Row{
		row("2026-11-04T11:00:00Z", time.Hour, "10", 1, 1, model.Late),
		row("2026-11-04T11:00:00Z", time.Hour, "15", 2, 2, model.Late),
	})
	late, err := sinktest.TooLate(context.Background(), sqliteOf(t, o))
	if err != nil {
		t.Fatal(err)
	}
	if len(late) != 1 || late[0].EventID != back || late[0].Position != "p1/000002.jsonl:1" || string(late[0].Payload) != returning {
		t.Errorf("too_late_events = %+v, want %s at p1/000002.jsonl:1 with its payload", late, back)
	}
}

// A partition folder created while --follow runs is discovered and read
// from its first file; once it has data, its own watermark holds the
// minimum like any partition's.
func TestFollowDiscoversNewPartition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	putFile(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "u1", "100")+"\n"+
		purchase("X", "2026-11-04T11:20:00Z", "u2", "1")+"\n") // watermark 11:10
	o := options(t, dir)
	o.Follow = true
	o.Pipeline.Triggers.Early = 0
	o.PollInterval = 100 * time.Millisecond
	o.QuietPeriod = 500 * time.Millisecond
	o.DiscoverEvery = 200 * time.Millisecond
	readers := watchReaders(t)
	job := runInBackground(t, o)
	waitForRow(t, o.Sink.Path, "ON_TIME [10:00)", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.OnTime
	})

	// A new partition: its first record is late data for [10:00).
	putFile(t, dir, "p1", "000001.jsonl", purchase("C", "2026-11-04T10:30:00Z", "u3", "20")+"\n") // p1 watermark 10:20
	waitForRow(t, o.Sink.Path, "LATE [10:00) with p1's record", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.Late && r.EventCount == 2
	})
	// p0 alone would now close [11:00); p1, active at 10:20, holds it.
	// Both readers have reported in five calls since p0 reported 12:20:
	// enough for the row to reach the sink, had p1 not held it (the negative
	// control below; in trials on one shared core it took two to four).
	putFile(t, dir, "p0", "000002.jsonl", purchase("Z", "2026-11-04T12:30:00Z", "u4", "3")+"\n") // p0 watermark 12:20
	reported := func(p, at string) func(map[string]readerReport) bool {
		return func(r map[string]readerReport) bool { return r[p].watermark >= ms(at) }
	}
	readers.waitFor(t, "p0 at 12:20", reported("p0", "2026-11-04T12:20:00Z"))
	readers.waitCalls(t, 5, "p0", "p1")
	if rows := rowsOf(readChangelog(t, o.Sink.Path), "2026-11-04T11:00:00Z"); len(rows) != 0 {
		t.Fatalf("[11:00) has rows while the new partition holds the watermark at 10:20:\n%s", table(rows))
	}
	putFile(t, dir, "p1", "000002.jsonl", purchase("D", "2026-11-04T12:40:00Z", "u5", "4")+"\n") // p1 12:30: minimum 12:20
	// Negative control: once p1 no longer holds [11:00), the same wait gives
	// its row, so the check above could have seen one.
	readers.waitFor(t, "p1 at 12:30", reported("p1", "2026-11-04T12:30:00Z"))
	readers.waitCalls(t, 5, "p0", "p1")
	if rows := rowsOf(readChangelog(t, o.Sink.Path), "2026-11-04T11:00:00Z"); len(rows) == 0 {
		t.Errorf("negative control: no [11:00) row five reader calls after p1 reported 12:30: the wait above proves nothing")
	}
	waitForRow(t, o.Sink.Path, "ON_TIME [11:00)", func(r model.Row) bool {
		return r.WindowStart == ms("2026-11-04T11:00:00Z") && r.State == model.OnTime
	})

	stopConserved(t, job, 5, 5)
}

// logBuffer is an io.Writer safe for the job's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLogs tees the process's log into a buffer for the test's duration
// (the readers run in this process on prism's loopback harness).
func captureLogs(t *testing.T) *logBuffer {
	logs := &logBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return logs
}

// stopConserved stops a follower gracefully and checks that it read and
// counted what the test wrote, with every figure conserved.
func stopConserved(t *testing.T, job *backgroundRun, read, counted int64) *Summary {
	t.Helper()
	sum, _ := job.stopAndWait(t, 30*time.Second)
	wantCounts(t, sum, read, counted, 0, 0, 0, 0)
	if !sum.Conserved {
		t.Errorf("not conserved:\n%s", job.out.String())
	}
	return sum
}

// readChangelog reads the sink's changelog while a job may be writing it.
func readChangelog(t *testing.T, path string) []model.Row {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := sinktest.ChangelogRows(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// The all-idle setting both ways (SPEC §2): with every partition idle the
// watermark follows processing time (the default, for live traffic: the
// open window gets ON_TIME and FINAL rows without new data) or holds (for a
// backfill: nothing closes while the input pauses).
func TestFollowAllIdle(t *testing.T) {
	for _, advance := range []watermark.IdleAdvance{watermark.AdvanceProcessingTime, watermark.AdvanceHold} {
		t.Run(advance.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			putFile(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "u1", "100")+"\n")
			putFile(t, dir, "p1", "000001.jsonl", purchase("B", "2026-11-04T10:20:00Z", "u2", "50")+"\n")
			o := followOptions(t, dir)
			o.Pipeline.Watermark.IdleTimeout = 2 * time.Second
			o.Pipeline.Watermark.IdleAdvance = advance
			logs := captureLogs(t)
			readers := watchReaders(t)
			job := runInBackground(t, o)
			final := func(r model.Row) bool {
				return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.Final
			}
			// Both partitions idle, and three calls of each reader since:
			// with every partition idle, each call reports the watermark
			// advanced with processing time, or held.
			readers.waitFor(t, "both partitions idle", func(r map[string]readerReport) bool { return r["p0"].idle && r["p1"].idle })
			r := readers.waitCalls(t, 3, "p0", "p1")
			held := r["p0"].watermark < ms("2026-11-04T11:00:00Z") && r["p1"].watermark < ms("2026-11-04T11:00:00Z")
			switch {
			case advance == watermark.AdvanceHold && !held:
				t.Errorf("every partition idle under hold, yet the readers report watermarks p0 %s, p1 %s",
					model.FormatTime(r["p0"].watermark), model.FormatTime(r["p1"].watermark))
			case advance == watermark.AdvanceProcessingTime && held:
				// Negative control of the check above: the same wait shows
				// the advance it looks for.
				t.Errorf("negative control: every partition idle under processing-time, yet the readers report watermarks p0 %s, p1 %s: the check proves nothing",
					model.FormatTime(r["p0"].watermark), model.FormatTime(r["p1"].watermark))
			}
			if advance == watermark.AdvanceProcessingTime {
				waitForRow(t, o.Sink.Path, "FINAL [10:00) once every partition is idle", final)
			}
			sum := stopConserved(t, job, 2, 2)
			rows := rowsOf(sum.Changelog(), "2026-11-04T10:00:00Z")
			want := []model.Row{
				row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 1, model.OnTime),
				row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 2, model.Final),
			}
			if advance == watermark.AdvanceHold {
				want = nil // the watermark held at 10:19: no row at all
			}
			assertRows(t, "[10:00) rows", rows, want)
			const idleLine = "every partition is idle: the watermark advances with processing time"
			if n := strings.Count(logs.String(), idleLine); (n > 0) != (advance == watermark.AdvanceProcessingTime) {
				t.Errorf("%d log lines %q, want them only with processing-time", n, idleLine)
			}
		})
	}
}

// A replay of files without a trailing newline, and of a binary file with
// no newline at all, counts every non-blank line: each is read and gets a
// verdict (SPEC §3).
func TestReplayUnterminatedLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	putFile(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "u1", "100")+"\n"+
		purchase("B", "2026-11-04T10:20:00Z", "u2", "50")) // no newline
	putFile(t, dir, "p0", "000002.jsonl", "\n  \n"+purchase("C", "2026-11-04T10:30:00Z", "u3", "20")+"\r") // CR, no LF
	putFile(t, dir, "p1", "000001.bin", "\x00\x01\xfe\xff garbage \x7f")                                   // binary, no newline
	putFile(t, dir, "p1", "000002.jsonl", purchase("D", "2026-11-04T10:40:00Z", "u4", "7"))                // the only line, unterminated
	o := options(t, dir)
	sum, out := run(t, o)
	wantCounts(t, sum, 5, 4, 0, 0, 1, 0)
	if !sum.Conserved || sum.Counts.QuarantinedBy[model.ReasonMalformedJSON] != 1 {
		t.Errorf("conserved %v, quarantined %v\n%s", sum.Conserved, sum.Counts.QuarantinedBy, out)
	}
	assertRows(t, "rows", sum.Changelog(), []model.Row{
		row("2026-11-04T10:00:00Z", time.Hour, "177", 4, 1, model.OnTime),
		row("2026-11-04T10:00:00Z", time.Hour, "177", 4, 2, model.Final),
	})
	q, err := sinktest.Quarantined(context.Background(), sqliteOf(t, o))
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Position != "p1/000001.bin:1" || !strings.Contains(string(q[0].Payload), "garbage") {
		t.Errorf("quarantined = %+v, want the binary file's one line", q)
	}
}

// Under --follow a last line without a newline is pending (the progress
// line's count) until the file has kept its size for --settle, and a
// graceful stop reads it at once: every non-blank line is read (SPEC §3).
func TestFollowUnterminatedLines(t *testing.T) {
	waitPending := func(t *testing.T, want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for sources.PendingTails() != want {
			if time.Now().After(deadline) {
				t.Fatalf("pending unterminated lines = %d, want %d", sources.PendingTails(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Run("settled", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		putFile(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "u1", "100")+"\n"+
			purchase("X", "2026-11-04T11:20:00Z", "u2", "1")) // X, unterminated, moves the watermark to 11:10
		o := followOptions(t, dir)
		o.Settle = 2 * time.Second
		job := runInBackground(t, o)
		waitPending(t, 1)
		waitForRow(t, o.Sink.Path, "ON_TIME [10:00) once X settled", func(r model.Row) bool {
			return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.OnTime
		})
		waitPending(t, 0)
		stopConserved(t, job, 2, 2)
	})
	t.Run("graceful stop", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		putFile(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "u1", "100")+"\n"+
			purchase("X", "2026-11-04T11:20:00Z", "u2", "1")+"\n"+
			purchase("B", "2026-11-04T10:20:00Z", "u3", "50")) // never settles within the test
		o := followOptions(t, dir)
		o.Settle = time.Hour
		job := runInBackground(t, o)
		waitForRow(t, o.Sink.Path, "ON_TIME [10:00)", func(r model.Row) bool {
			return r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.OnTime
		})
		waitPending(t, 1)
		stopConserved(t, job, 3, 3)
	})
}
