package sources_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/gcstest"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/runnertest"
	"github.com/revenue-stream/hourly/testing/s3test"
	"github.com/revenue-stream/hourly/watermark"
)

func TestMain(m *testing.M) {
	localrunner.UseSafeOptions("prism")
	os.Exit(ptest.MainRet(m))
}

// --- helpers -------------------------------------------------------------

var (
	ms       = rowtest.MS
	table    = rowtest.Table
	purchase = rowtest.OwnPurchase
)

// put writes a file as a producer does: a temporary name, then a rename.
func put(t *testing.T, dir, partition, name string, lines ...string) {
	t.Helper()
	putRaw(t, dir, partition, name, strings.Join(lines, "\n")+"\n")
}

func putRaw(t *testing.T, dir, partition, name, content string) {
	t.Helper()
	if err := write(dir, partition, name, content); err != nil {
		t.Fatal(err)
	}
}

func write(dir, partition, name, content string) error {
	if !files.IsLocal(dir) {
		// An object appears whole when its upload completes: that is the
		// object store's rename.
		return files.WriteFile(context.Background(), files.Join(dir, partition, name), func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		})
	}
	pdir := filepath.Join(dir, partition)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(pdir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(pdir, name))
}

// stamped is a record as a test sees it, with its element timestamp.
type stamped struct {
	Timestamp beam.EventTime
	Record    model.Record
}

var (
	recMu    sync.Mutex
	recStore = map[string][]stamped{}
	recSeq   int
)

func init() {
	register.DoFn2x0[beam.EventTime, model.Record](&collectRecordsFn{})
}

// collectRecordsFn keeps records with their timestamps in the test process
// (prism runs the SDK harness in loopback mode, in this process).
type collectRecordsFn struct{ Name string }

func (f *collectRecordsFn) ProcessElement(ts beam.EventTime, r model.Record) {
	recMu.Lock()
	defer recMu.Unlock()
	recStore[f.Name] = append(recStore[f.Name], stamped{ts, r})
}

type recordsHandle string

func collectRecords(s beam.Scope, col beam.PCollection) recordsHandle {
	recMu.Lock()
	recSeq++
	name := fmt.Sprintf("records#%d", recSeq)
	recMu.Unlock()
	beam.ParDo0(s.Scope("CollectRecords"), &collectRecordsFn{Name: name}, col)
	return recordsHandle(name)
}

func (h recordsHandle) values() []stamped {
	recMu.Lock()
	defer recMu.Unlock()
	return slices.Clone(recStore[string(h)])
}

// waitFor polls cond until it holds or the deadline passes. The deadlines
// are ceilings for a loaded CI machine; a passing wait takes a few seconds.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitConserved waits until the job's counters have judged every record the
// source emitted (as collectRecords saw them), then checks SPEC §4's
// identity: a live job's counters lag its records, never the other way.
func waitConserved(t *testing.T, j *job, read recordsHandle) {
	t.Helper()
	var c metrics.Counts
	deadline := time.Now().Add(time.Minute)
	for {
		if m, err := j.Metrics(context.Background()); err == nil {
			c, _, _ = metrics.Committed(*m)
			if n := int64(len(read.values())); c.Read == n && c.Verdicts() == n {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the counters read %s for %d records emitted", c.Identity(), len(read.values()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
}

// waitReaderCalls waits until the reader of each of partitions in folder dir
// has ended n calls begun after this one was made: calls that looked at the
// folder as it is now. It counts the calls (sources.ReaderCalls), not time,
// so a loaded machine makes it slower, never shorter.
func waitReaderCalls(t *testing.T, dir string, n int, partitions ...string) {
	t.Helper()
	want := map[string]int{}
	for _, p := range partitions {
		want[p] = sources.ReaderCalls(dir, p) + n + 1 // call n+1 begins once call n has ended
	}
	waitFor(t, time.Minute, fmt.Sprintf("%d reader calls of %v", n, partitions), func() bool {
		for _, p := range partitions {
			if sources.ReaderCalls(dir, p) < want[p] {
				return false
			}
		}
		return true
	})
}

func findRow(rows []model.Row, start string, st model.ResultState) (model.Row, bool) {
	for _, r := range rows {
		if r.WindowStart == ms(start) && r.State == st {
			return r, true
		}
	}
	return model.Row{}, false
}

// job runs a streaming pipeline until stopped. It is submitted to a prism
// job server and cancelled through its job service, as the launcher does:
// cancelling the context given to beam.Run would leave a following job
// polling in the job server for the rest of the test binary, and the jobs
// such tests leave behind slowed the later ones until their waits timed out.
type job struct {
	*runnertest.Job
	signal sources.StopSignal
}

// startJob submits p; signal is the stop request its readers were built
// with.
func startJob(t *testing.T, p *beam.Pipeline, signal sources.StopSignal) *job {
	t.Helper()
	js, err := runnertest.StartJobServer()
	if err != nil {
		t.Fatal(err)
	}
	rj, err := runnertest.Submit(js, p)
	if err != nil {
		t.Fatal(err)
	}
	return &job{Job: rj, signal: signal}
}

// requestStop writes the job's stop request, as the launcher's graceful
// stop does.
func (j *job) requestStop(t *testing.T) {
	t.Helper()
	if err := j.signal.Request(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// stop stops the readers gracefully, cancels the job through the job
// service and waits until the job server has ended it.
func (j *job) stop(t *testing.T) {
	t.Helper()
	j.requestStop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := j.Cancel(ctx); err != nil {
		t.Fatalf("job did not end after its cancellation: %v", err)
	}
	if st, err := j.State(ctx); err != nil || st != jobpb.JobState_CANCELLED {
		t.Errorf("job state after cancel = %v (%v), want CANCELLED", st, err)
	}
}

func followOptions(t *testing.T, o pipeline.Options) sources.FolderOptions {
	return sources.FolderOptions{
		Follow:       true,
		Watermark:    o.Watermark,
		Event:        o.Event,
		PollInterval: 100 * time.Millisecond,
		Stop:         sources.NewStopSignal(t.TempDir()),
	}
}

// inFolders runs a scenario against a local folder, a gs:// prefix on a
// GCS JSON API server and an s3:// prefix on an S3 API server (the fake
// ones, in this process): the source reads all three through Beam's
// filesystem and must behave the same.
func inFolders(t *testing.T, scenario func(t *testing.T, dir string)) {
	t.Run("local", func(t *testing.T) { scenario(t, t.TempDir()) })
	t.Run("gcs", func(t *testing.T) { scenario(t, gcstest.NewBucket(t)+"/raw") })
	t.Run("s3", func(t *testing.T) { scenario(t, s3test.NewBucket(t)+"/raw") })
}

// mkPartition creates an empty partition: a folder, or on an object store
// the placeholder object "PARTITION/" (what the GCS console's "create
// folder" makes), since a prefix without objects does not exist.
func mkPartition(t *testing.T, dir, partition string) {
	t.Helper()
	if files.IsLocal(dir) {
		if err := os.MkdirAll(filepath.Join(dir, partition), 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	if strings.HasPrefix(dir, "s3://") {
		s3test.Put(t, files.Join(dir, partition)+"/", nil)
		return
	}
	gcstest.Put(t, files.Join(dir, partition)+"/", nil)
}

// --- (1) replay of a folder alone -----------------------------------------

func TestReplayFolder(t *testing.T) { inFolders(t, testReplayFolder) }

func testReplayFolder(t *testing.T, dir string) {
	cfg := event.DefaultConfig()
	cfg.MaxLine = 120
	policy := watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Minute}

	files := []struct {
		partition, name, content string
	}{
		{"p0", "000001.jsonl", strings.Join([]string{
			purchase("a", "2026-11-04T10:20:00Z", "1"),
			"",
			purchase("b", "2026-11-04T10:05:00Z", "2") + "\r",
			`{"broken`,
			"  \t",
			purchase("c", "2026-11-04T10:40:00Z", "3"),
		}, "\n") + "\n"},
		{"p0", "000002.jsonl", strings.Join([]string{
			`{"event_id":"big","pad":"` + strings.Repeat("x", 200) + `"}`,
			purchase("d", "2026-11-04T10:00:00Z", "4"),
			purchase("e", "2026-11-04T11:00:00Z", "5"),
		}, "\n") + "\n" + purchase("torn", "2026-11-04T12:00:00Z", "6")},
		{"p1", "a.jsonl", purchase("x", "2026-11-04T09:00:00Z", "7") + "\n\n"},
		{"p1", "b.jsonl", purchase("y", "2026-11-04T12:00:00Z", "8") + "\n" + purchase("z", "2026-11-04T08:00:00Z", "9") + "\n\n\n"},
	}
	for _, f := range files {
		putRaw(t, dir, f.partition, f.name, f.content)
	}

	// What the folder holds, worked out from the SPEC's rules: lines from 1,
	// blank lines skipped, a last line without a newline read as a line, a
	// line over MaxLine flagged;
	// WatermarkBefore from the watermark policy and validation alone.
	type want struct {
		pos, line string
		oversized bool
		before    int64
	}
	var wants []want
	parts := map[string]*watermark.Partition{}
	for _, f := range files {
		p := parts[f.partition]
		if p == nil {
			p = watermark.NewPartition(policy, 0)
			parts[f.partition] = p
		}
		lines := strings.Split(f.content, "\n")
		for i, l := range lines { // the last piece, without a newline, is a line too
			l = strings.TrimSuffix(l, "\r")
			if strings.TrimSpace(l) == "" {
				continue
			}
			over := len(l) > cfg.MaxLine
			rec := model.Record{Line: []byte(l), Oversized: over, ReadAt: time.Now().UnixMilli()}
			ev, q := event.Parse(rec, cfg)
			before := p.Observe(ev.EventTime, q == nil, 0)
			wants = append(wants, want{fmt.Sprintf("%s/%s:%d", f.partition, f.name, i+1), l, over, before})
		}
	}

	startedAt := time.Now().UnixMilli()
	p, s := beam.NewPipelineWithRoot()
	recs, _ := sources.ReadFolder(s, dir, sources.FolderOptions{Watermark: policy, Event: cfg, MaxPerCall: 2})
	h := collectRecords(s, recs)
	if _, err := runnertest.Run(p); err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	endedAt := time.Now().UnixMilli()

	got := h.values()
	slices.SortFunc(got, func(a, b stamped) int { return strings.Compare(a.Record.Position, b.Record.Position) })
	slices.SortFunc(wants, func(a, b want) int { return strings.Compare(a.pos, b.pos) })
	if len(got) != len(wants) {
		var gp []string
		for _, g := range got {
			gp = append(gp, g.Record.Position)
		}
		t.Fatalf("%d records %q, want %d", len(got), gp, len(wants))
	}
	for i, w := range wants {
		g := got[i].Record
		part, _, _ := strings.Cut(w.pos, "/")
		line := w.line
		if w.oversized {
			line = w.line[:min(len(w.line), event.MaxPayloadPrefix)]
		}
		if g.Position != w.pos || g.Partition != part || string(g.Line) != line || g.Oversized != w.oversized || g.WatermarkBefore != w.before {
			t.Errorf("record %d:\n got %s %s %q oversized=%v before=%s\nwant %s %q oversized=%v before=%s",
				i, g.Partition, g.Position, g.Line, g.Oversized, model.FormatTime(g.WatermarkBefore),
				w.pos, line, w.oversized, model.FormatTime(w.before))
		}
		if g.ReadAt < startedAt || g.ReadAt > endedAt {
			t.Errorf("%s: ReadAt %d outside the run [%d, %d]", g.Position, g.ReadAt, startedAt, endedAt)
		}
		// The element timestamp is the partition watermark before the record.
		if wantTs := max(w.before, int64(mtime.MinTimestamp)); int64(got[i].Timestamp) != wantTs {
			t.Errorf("%s: timestamp %v, want %v", g.Position, got[i].Timestamp, mtime.Time(wantTs))
		}
	}
	if n := len(wants); n != 11 {
		t.Errorf("the fixture changed: %d records", n)
	}
}

// --- (2) replay through the pipeline: SPEC §7 minimal sequence --------------

func TestReplayMinimalSequence(t *testing.T) { inFolders(t, testReplayMinimalSequence) }

func testReplayMinimalSequence(t *testing.T, dir string) {
	put(t, dir, "p0", "events.jsonl",
		purchase("A", "2026-11-04T10:15:00Z", "100"),
		purchase("B", "2026-11-04T10:20:00Z", "50"),
		purchase("A", "2026-11-04T10:15:00Z", "100.0"), // identical copy
		purchase("X", "2026-11-04T11:20:00Z", "1"),     // watermark -> 11:10
		purchase("C", "2026-11-04T10:50:00Z", "20"),    // late, within lateness
		purchase("A", "2026-11-04T10:15:00Z", "120"),   // conflicting payload
		purchase("Y", "2026-11-05T11:20:00Z", "2"),     // watermark -> 11:10 next day
		purchase("D", "2026-11-04T10:10:00Z", "7"),     // too late
	)
	o := pipeline.Defaults()
	o.Triggers.Early = 0

	p, s := beam.NewPipelineWithRoot()
	recs, _ := sources.ReadFolder(s, dir, sources.FolderOptions{Watermark: o.Watermark, Event: o.Event, MaxPerCall: 1})
	out, err := pipeline.Build(s, recs, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	tooLate := collect.Into[model.TooLate](s, out.TooLate, "toolate")
	conflicts := collect.Into[model.Conflict](s, out.Conflicts, "conflicts")
	quarantined := collect.Into[model.Quarantined](s, out.Quarantined, "quarantined")
	pr, err := runnertest.Run(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// SPEC §4's identity with this scenario's exact figures: 8 read, 5
	// counted (A, B, X, C, Y), 1 duplicate, 1 conflict, 1 too late.
	c := collect.Counts(pr)
	if err := c.Check(); err != nil {
		t.Error(err)
	}
	if c.Read != 8 || c.Counted != 5 || c.Duplicates != 1 || c.Conflicts != 1 || c.Quarantined != 0 || c.TooLate != 1 {
		t.Errorf("counts %s, want read 8 = counted 5 + duplicates 1 + conflicts 1 + quarantined 0 + too_late 1", c.Identity())
	}
	// One record per reader call: the runner sees the watermark between
	// records, so the changelog is SPEC §7's, ON_TIME 150 then LATE 170.
	rowtest.AssertRowSet(t, "rows", rows.Values(), rowtest.MinimalChangelog())
	if l := tooLate.Values(); len(l) != 1 || l[0].EventID != "D" || l[0].Position != "p0/events.jsonl:8" {
		t.Errorf("too-late = %+v, want D at p0/events.jsonl:8", l)
	}
	if c := conflicts.Values(); len(c) != 1 || c[0].EventID != "A" || c[0].Position != "p0/events.jsonl:6" {
		t.Errorf("conflicts = %+v, want A at p0/events.jsonl:6", c)
	}
	if q := quarantined.Values(); len(q) != 0 {
		t.Errorf("quarantined = %+v", q)
	}
}

// --- (3) follow mode and graceful stop ------------------------------------

func TestFollowAndStop(t *testing.T) {
	inFolders(t, func(t *testing.T, dir string) { testFollowAndStop(t, dir, true) })
	// The same run without the stop request: within the same wait the
	// reader reads the file put where the stop would have been, and the
	// checks that the stopped runs pass see it.
	t.Run("negative control: no stop", func(t *testing.T) { testFollowAndStop(t, t.TempDir(), false) })
}

// readAfterStop is what the run read of a file put after the stop.
func readAfterStop(read recordsHandle) []string {
	var out []string
	for _, r := range read.values() {
		if strings.Contains(r.Record.Position, "000004") {
			out = append(out, r.Record.Position)
		}
	}
	return out
}

// finalPastWatermark reports a FINAL row for a window other than [10:00,
// 11:00): the watermark reached 12:20 before the stop, so only that window
// (closing at 12:00) may be FINAL.
func finalPastWatermark(rows []model.Row) bool {
	return slices.ContainsFunc(rows, func(r model.Row) bool {
		return r.State == model.Final && r.WindowStart != ms("2026-11-04T10:00:00Z")
	})
}

func testFollowAndStop(t *testing.T, dir string, stop bool) {
	mkPartition(t, dir, "p0")
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.Triggers.AllowedLateness = time.Hour // so one window can close within the test

	p, s := beam.NewPipelineWithRoot()
	so := followOptions(t, o)
	so.Settle = time.Hour // a last line without a newline waits for the stop
	recs, _ := sources.ReadFolder(s, dir, so)
	read := collectRecords(s, recs)
	out, err := pipeline.Build(s, recs, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	j := startJob(t, p, so.Stop)
	stopped := false
	defer func() {
		if !stopped {
			j.stop(t)
		}
	}()
	count := func(n int) func() bool { return func() bool { return len(read.values()) >= n } }

	put(t, dir, "p0", "000001.jsonl", purchase("A", "2026-11-04T10:15:00Z", "100"), purchase("B", "2026-11-04T10:20:00Z", "50"))
	waitFor(t, time.Minute, "the first file's records", count(2))

	put(t, dir, "p0", "000002.jsonl", purchase("X", "2026-11-04T11:20:00Z", "1")) // watermark 11:10
	waitFor(t, time.Minute, "ON_TIME [10:00, 11:00)", func() bool {
		_, ok := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.OnTime)
		return ok
	})

	put(t, dir, "p0", "000002a.jsonl", purchase("C", "2026-11-04T10:50:00Z", "20")) // late, within lateness
	waitFor(t, time.Minute, "LATE [10:00, 11:00) with 170", func() bool {
		r, ok := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.Late)
		return ok && r.EventCount == 3 && r.RevenueMicros == 170_000_000
	})

	// Z moves the watermark to 12:20 > 12:00 = close of [10:00); T, a last
	// line without a newline, waits: it does not settle within the test,
	// and no later file comes before the stop.
	putRaw(t, dir, "p0", "000003.jsonl", purchase("Z", "2026-11-04T12:30:00Z", "3")+"\n"+purchase("T", "2026-11-04T12:35:00Z", "5"))
	waitFor(t, time.Minute, "FINAL [10:00, 11:00)", func() bool {
		_, ok := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.Final)
		return ok
	})

	// After the stop nothing more is read, and the watermark stays: the
	// file below would close [11:00, 12:00) if it were read.
	if stop {
		// The stopped reader's last pass reads T (SPEC §3), which nothing
		// else reads: once T is read, p0's reader has seen the stop, and
		// every later call sees it too.
		j.requestStop(t)
		waitFor(t, time.Minute, "T, read by the last pass", func() bool {
			return slices.ContainsFunc(read.values(), func(r stamped) bool { return r.Record.Position == "p0/000003.jsonl:2" })
		})
	}
	put(t, dir, "p0", "000004.jsonl", purchase("W", "2026-11-04T14:30:00Z", "4"))
	// Two calls of p0's reader that began after 000004 appeared have ended:
	// a reader that had not stopped read it in the first of them, and what
	// a call emits reaches collectRecords within the call (the negative
	// control shows both).
	waitReaderCalls(t, dir, 2, "p0")
	if !stop {
		if len(readAfterStop(read)) == 0 {
			t.Errorf("negative control: without the stop, 000004 was not read within two reader calls: the wait proves nothing")
		}
		waitFor(t, time.Minute, "FINAL [11:00, 12:00) once W is read", func() bool {
			_, ok := findRow(rows.Values(), "2026-11-04T11:00:00Z", model.Final)
			return ok
		})
		if !finalPastWatermark(rows.Values()) {
			t.Errorf("negative control: the FINAL check misses FINAL [11:00):\n%s", table(rows.Values()))
		}
		waitConserved(t, j, read)
		return
	}
	waitConserved(t, j, read)
	j.stop(t)
	stopped = true

	for _, pos := range readAfterStop(read) {
		t.Errorf("read %s after the stop", pos)
	}
	got := rows.Values()
	if finalPastWatermark(got) {
		t.Errorf("FINAL for a window whose close the watermark did not pass:\n%s", table(got))
	}
	if r, ok := findRow(got, "2026-11-04T10:00:00Z", model.Final); !ok || r.EventCount != 3 || r.RevenueMicros != 170_000_000 {
		t.Errorf("FINAL [10:00) = %+v\n%s", r, table(got))
	}
}

// --- (4) several partitions: a slow one holds the watermark, an idle one
// stops holding it --------------------------------------------------------

func TestSlowPartitionHoldsWatermark(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl",
		purchase("A", "2026-11-04T10:15:00Z", "1"),
		purchase("X", "2026-11-04T11:20:00Z", "1"),
		purchase("Z", "2026-11-04T12:30:00Z", "1")) // p0 watermark 12:20
	put(t, dir, "p1", "000001.jsonl", purchase("B", "2026-11-04T10:20:00Z", "1")) // p1 watermark 10:10

	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.Watermark.IdleTimeout = time.Hour // nobody goes idle here

	// One record per call: p0, with more to read, resumes at once while p1
	// waits for its next poll, so prism runs them in different bundles.
	so := followOptions(t, o)
	so.MaxPerCall = 1
	p, s := beam.NewPipelineWithRoot()
	recs, _ := sources.ReadFolder(s, dir, so)
	read := collectRecords(s, recs)
	out, err := pipeline.Build(s, recs, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	j := startJob(t, p, so.Stop)
	defer j.stop(t)

	onTime := func(start string) bool { _, ok := findRow(rows.Values(), start, model.OnTime); return ok }
	waitFor(t, time.Minute, "both partitions' records", func() bool { return len(read.values()) >= 4 })
	// p0 alone would close [10:00) and [11:00); p1 (10:10) holds both.
	// Each reader has reported its watermark in three calls since: p0's
	// 12:20 would have closed [10:00) by then, as p1's 11:30 does below.
	waitReaderCalls(t, dir, 3, "p0", "p1")
	if onTime("2026-11-04T10:00:00Z") {
		t.Fatalf("ON_TIME while p1 holds the watermark at 10:10:\n%s", table(rows.Values()))
	}

	put(t, dir, "p1", "000002.jsonl", purchase("C", "2026-11-04T11:40:00Z", "1")) // p1 11:30: min 11:30
	// Negative control: once p1 no longer holds [10:00), the same wait
	// gives its ON_TIME row, so the check above could have seen one.
	waitFor(t, time.Minute, "C", func() bool { return len(read.values()) >= 5 })
	waitReaderCalls(t, dir, 3, "p0", "p1")
	if !onTime("2026-11-04T10:00:00Z") {
		t.Errorf("negative control: no ON_TIME [10:00) three reader calls after p1 moved to 11:30: the wait above proves nothing\n%s", table(rows.Values()))
	}
	waitFor(t, time.Minute, "ON_TIME [10:00)", func() bool { return onTime("2026-11-04T10:00:00Z") })
	if r, _ := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.OnTime); r.EventCount != 2 {
		t.Errorf("ON_TIME [10:00) has %d events, want 2 (A from p0, B from p1)", r.EventCount)
	}
	if onTime("2026-11-04T11:00:00Z") {
		t.Fatalf("ON_TIME [11:00) at watermark 11:30:\n%s", table(rows.Values()))
	}

	put(t, dir, "p1", "000003.jsonl", purchase("D", "2026-11-04T12:45:00Z", "1")) // p1 12:35: min 12:20
	waitFor(t, time.Minute, "ON_TIME [11:00)", func() bool { return onTime("2026-11-04T11:00:00Z") })
	if r, _ := findRow(rows.Values(), "2026-11-04T11:00:00Z", model.OnTime); r.EventCount != 2 {
		t.Errorf("ON_TIME [11:00) has %d events, want 2 (X, C)", r.EventCount)
	}
	if onTime("2026-11-04T12:00:00Z") {
		t.Errorf("ON_TIME [12:00) at watermark 12:20:\n%s", table(rows.Values()))
	}
	waitConserved(t, j, read)
}

func TestIdlePartitionStopsHolding(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000000.jsonl",
		purchase("A", "2026-11-04T10:15:00Z", "1"),
		purchase("X", "2026-11-04T11:20:00Z", "1")) // p0 watermark 11:10
	put(t, dir, "p1", "000001.jsonl", purchase("B", "2026-11-04T10:05:00Z", "1")) // p1 watermark 09:55

	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.Watermark.IdleTimeout = 3 * time.Second

	p, s := beam.NewPipelineWithRoot()
	so := followOptions(t, o)
	recs, _ := sources.ReadFolder(s, dir, so)
	read := collectRecords(s, recs)
	out, err := pipeline.Build(s, recs, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	j := startJob(t, p, so.Stop)
	defer j.stop(t)

	// Keep p0 active, its watermark below 11:20, while p1 stays silent.
	feed := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for i := 1; ; i++ {
			select {
			case <-feed:
				return
			case <-time.After(300 * time.Millisecond):
			}
			line := purchase(fmt.Sprintf("k%d", i), fmt.Sprintf("2026-11-04T11:2%d:%02dZ", i/60%10, i%60), "0")
			if err := write(dir, "p0", fmt.Sprintf("%06d.jsonl", i), line+"\n"); err != nil {
				t.Errorf("feeder: %v", err)
				return
			}
		}
	}()
	stopFeeding := sync.OnceFunc(func() { close(feed); <-fed })
	defer stopFeeding()

	lastP1 := func() int64 {
		var last int64
		for _, r := range read.values() {
			if r.Record.Partition == "p1" {
				last = max(last, r.Record.ReadAt)
			}
		}
		return last
	}
	waitFor(t, time.Minute, "p1's record", func() bool { return lastP1() > 0 })
	var seen int64
	waitFor(t, time.Minute, "ON_TIME [10:00) once p1 is idle", func() bool {
		_, ok := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.OnTime)
		seen = time.Now().UnixMilli()
		return ok
	})
	if idleAt := lastP1() + o.Watermark.IdleTimeout.Milliseconds(); seen < idleAt {
		t.Errorf("ON_TIME seen %d ms before p1 could be idle", idleAt-seen)
	}
	if r, _ := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.OnTime); r.EventCount != 2 {
		t.Errorf("ON_TIME [10:00) has %d events, want 2", r.EventCount)
	}

	// p1 comes back with an old record: late, within allowed lateness.
	put(t, dir, "p1", "000002.jsonl", purchase("C", "2026-11-04T10:30:00Z", "1"))
	waitFor(t, time.Minute, "LATE [10:00) with p1's returning record", func() bool {
		r, ok := findRow(rows.Values(), "2026-11-04T10:00:00Z", model.Late)
		return ok && r.EventCount == 3
	})
	stopFeeding()
	waitConserved(t, j, read)
}
