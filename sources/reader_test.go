package sources

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/watermark"
)

var testPolicy = watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Minute}

func testConfig() event.Config {
	c := event.DefaultConfig()
	c.MaxLine = 200
	return c
}

// purchase is one valid input line.
func purchase(id, eventTime string) string { return rowtest.Purchase(id, eventTime, "u", "1") }

// put writes a file the way a producer does: under a temporary name, then
// renamed in, so a follower never sees it half written.
func put(t *testing.T, dir, partition, name, content string) {
	t.Helper()
	if err := produce(dir, partition, name, content); err != nil {
		t.Fatal(err)
	}
}

func produce(dir, partition, name, content string) error {
	pdir := rawlog.PartitionDir(dir, partition)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(pdir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(pdir, name))
}

// appendTo grows a file in place (a producer finishing a torn line).
func appendTo(t *testing.T, dir, partition, name, content string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(rawlog.PartitionDir(dir, partition), name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// partitionRun drives a reader the way readFn does: call after call, each
// resuming from the state claimed by the previous one.
type partitionRun struct {
	t           *testing.T
	dir, part   string
	follow      bool
	cfg         event.Config
	rest        restriction
	max         int
	recs        []model.Record
	checkpoints []model.Checkpoint
	outcomes    []sdfread.Outcome
}

func newRun(t *testing.T, dir, part string, follow bool, max int) *partitionRun {
	return &partitionRun{t: t, dir: dir, part: part, follow: follow, cfg: testConfig(),
		rest: newRestriction(time.Now().UnixMilli()), max: max}
}

// call runs one ProcessElement's worth of reading.
func (p *partitionRun) call() sdfread.Outcome {
	p.t.Helper()
	r := newReader(p.dir, p.part, p.rest, FolderOptions{Follow: p.follow, Watermark: testPolicy, Event: p.cfg})
	r.o.MaxPerCall = p.max
	r.emit = func(rec model.Record) { p.recs = append(p.recs, rec) }
	r.checkpoint = func(c model.Checkpoint) { p.checkpoints = append(p.checkpoints, c) }
	out, err := r.run()
	if err != nil {
		p.t.Fatalf("run: %v", err)
	}
	p.rest = r.rest
	p.outcomes = append(p.outcomes, out)
	return out
}

// drain calls until the reader is caught up or finished.
func (p *partitionRun) drain() sdfread.Outcome {
	p.t.Helper()
	for range 10000 {
		if out := p.call(); out != sdfread.Budget {
			return out
		}
	}
	p.t.Fatal("reader never caught up")
	return 0
}

type recView struct {
	Position  string
	Line      string
	Oversized bool
	Before    int64
}

func views(recs []model.Record) []recView {
	out := make([]recView, len(recs))
	for i, r := range recs {
		out[i] = recView{r.Position, string(r.Line), r.Oversized, r.WatermarkBefore}
	}
	return out
}

// scanned is what rawlog.Scan and a Stamper, the rules reconcile and the
// oracle use, make of a partition.
func scanned(t *testing.T, dir, part string, cfg event.Config) []recView {
	t.Helper()
	st := rawlog.NewStamper(testPolicy, cfg, time.Now().UnixMilli())
	var out []recView
	if _, err := rawlog.Scan(dir, part, cfg.MaxLine, time.Now().UnixMilli(), func(rec model.Record) error {
		rec.Line = bytes.Clone(rec.Line)
		st.Stamp(&rec)
		out = append(out, recView{rec.Position, string(rec.Line), rec.Oversized, rec.WatermarkBefore})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReaderReplayMatchesScan(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl", strings.Join([]string{
		purchase("a", "2026-11-04T10:20:00Z"),
		"",
		"   ",
		`{"broken`,
		purchase("b", "2026-11-04T10:05:00Z") + "\r",
		purchase("c", "2026-11-04T10:40:00Z"),
	}, "\n")+"\n")
	put(t, dir, "p0", "000002.jsonl", strings.Join([]string{
		`{"pad":"` + strings.Repeat("x", 300) + `"}`, // oversized
		purchase("d", "2026-11-04T10:00:00Z"),
		purchase("e", "2030-01-01T00:00:00Z"), // future: never advances
		purchase("f", "2026-11-04T11:00:00Z"),
	}, "\n")+"\n"+purchase("torn", "2026-11-04T12:00:00Z")) // no newline: still a line

	want := scanned(t, dir, "p0", testConfig())
	if len(want) != 9 || want[8].Position != "p0/000002.jsonl:5" {
		t.Fatalf("scan gave %d records, want 9 ending with the unterminated line: %+v", len(want), want)
	}
	for _, max := range []int{1, 3, 1000} {
		t.Run(fmt.Sprintf("max=%d", max), func(t *testing.T) {
			p := newRun(t, dir, "p0", false, max)
			if out := p.drain(); out != sdfread.Finished {
				t.Fatalf("sdfread.Outcome %v, want finished", out)
			}
			if got := views(p.recs); !slices.Equal(got, want) {
				t.Errorf("records differ\n got %+v\nwant %+v", got, want)
			}
			if !p.rest.Closed || !slices.Equal(p.rest.Read, []string{"000001.jsonl", "000002.jsonl"}) {
				t.Errorf("final state %v", p.rest)
			}
			if wantMax := rowtest.MS("2026-11-04T12:00:00Z"); p.rest.MaxValid != wantMax {
				t.Errorf("MaxValid = %s, want %s", watermark.FormatMs(p.rest.MaxValid), watermark.FormatMs(wantMax))
			}
			if !p.recs[4].Oversized {
				t.Errorf("oversized record %+v", p.recs[4])
			}
		})
	}
}

// TestReaderStopsAtTheHorizon: a call ends as soon as the partition
// watermark reaches the read-ahead horizon (the record that moved it there
// is the call's last); the next call, under a later horizon, goes on from
// there, and the calls together read what one unbounded call reads.
func TestReaderStopsAtTheHorizon(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "a.jsonl", strings.Join([]string{
		purchase("1", "2026-11-04T10:00:00Z"),
		purchase("2", "2026-11-04T10:30:00Z"),
		purchase("3", "2026-11-04T10:20:00Z"), // below the watermark's maximum: moves nothing
		purchase("4", "2026-11-04T11:10:00Z"), // watermark 11:00: the horizon
		purchase("5", "2026-11-04T11:20:00Z"),
	}, "\n")+"\n")
	want := scanned(t, dir, "p0", testConfig())
	p := newRun(t, dir, "p0", false, 1000)
	for i, h := range []string{"2026-11-04T11:00:00Z", "2026-11-04T11:00:00Z", ""} {
		r := newReader(dir, "p0", p.rest, FolderOptions{Watermark: testPolicy, Event: p.cfg})
		if h != "" {
			r.horizon = rowtest.MS(h)
		}
		r.emit = func(rec model.Record) { p.recs = append(p.recs, rec) }
		out, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		p.rest = r.rest
		wantOut, wantRecs := sdfread.Budget, 4
		if i == 2 {
			wantOut, wantRecs = sdfread.Finished, 5
		}
		if out != wantOut || len(p.recs) != wantRecs {
			t.Fatalf("call %d (horizon %q): %v after %d records, want %v after %d", i, h, out, len(p.recs), wantOut, wantRecs)
		}
	}
	if got := views(p.recs); !slices.Equal(got, want) {
		t.Errorf("records differ\n got %+v\nwant %+v", got, want)
	}
}

func TestReaderResumesFromEveryClaim(t *testing.T) {
	// A runner may checkpoint after any claim: resuming from each claimed
	// state must continue with exactly the records that follow it.
	dir := t.TempDir()
	put(t, dir, "p0", "a.jsonl", purchase("1", "2026-11-04T10:00:00Z")+"\n\n"+purchase("2", "2026-11-04T10:30:00Z")+"\n")
	put(t, dir, "p0", "b.jsonl", purchase("3", "2026-11-04T10:10:00Z")+"\n"+purchase("4", "2026-11-04T11:30:00Z")+"\n")
	full := newRun(t, dir, "p0", false, 1000)
	var claims []restriction
	r := newReader(dir, "p0", full.rest, FolderOptions{Watermark: testPolicy, Event: testConfig()})
	r.claim = func(next restriction) bool { claims = append(claims, next.Clone()); return true }
	r.emit = func(rec model.Record) { full.recs = append(full.recs, rec) }
	if out, err := r.run(); err != nil || out != sdfread.Finished {
		t.Fatalf("run = %v, %v", out, err)
	}
	want := views(full.recs)
	for i, c := range claims {
		p := newRun(t, dir, "p0", false, 1000)
		p.rest = c
		p.drain()
		if got := views(p.recs); !slices.Equal(got, want[i+1:]) {
			t.Errorf("resumed after claim %d (%v):\n got %+v\nwant %+v", i, c, got, want[i+1:])
		}
	}
}

func TestReaderFollow(t *testing.T) {
	dir := t.TempDir()
	p := newRun(t, dir, "p0", true, 1000)
	if err := os.MkdirAll(filepath.Join(dir, "p0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := p.drain(); out != sdfread.CaughtUp || len(p.recs) != 0 {
		t.Fatalf("empty partition: %v, %d records", out, len(p.recs))
	}

	// The newest file ends in a torn line: it is read once it gets its
	// newline.
	put(t, dir, "p0", "000002.jsonl", purchase("a", "2026-11-04T10:00:00Z")+"\n"+`{"event_id":"b"`)
	p.drain()
	appendTo(t, dir, "p0", "000002.jsonl", `,"event_time":"2026-11-04T10:30:00Z","user_id":"u","amount":"1"}`+"\n")
	p.drain()

	// A later file: the reader moves on.
	put(t, dir, "p0", "000003.jsonl", purchase("c", "2026-11-04T10:40:00Z")+"\n")
	p.drain()

	// A file sorting before the ones read: read next, after the current one.
	put(t, dir, "p0", "000001.jsonl", purchase("late", "2026-11-04T09:00:00Z")+"\n")
	put(t, dir, "p0", "000004.jsonl", purchase("d", "2026-11-04T10:50:00Z")+"\n"+`{"torn":`)
	p.drain()
	// 000004 is the newest and torn: waited on. Then 000005 appears, so
	// 000004 is complete and its unterminated last line is read as a line.
	put(t, dir, "p0", "000005.jsonl", purchase("e", "2026-11-04T11:00:00Z")+"\n")
	if out := p.drain(); out != sdfread.CaughtUp {
		t.Fatalf("sdfread.Outcome %v", out)
	}

	var got []string
	for _, r := range p.recs {
		got = append(got, r.Position)
	}
	want := []string{
		"p0/000002.jsonl:1", "p0/000002.jsonl:2", "p0/000003.jsonl:1",
		"p0/000001.jsonl:1", "p0/000004.jsonl:1", "p0/000004.jsonl:2", "p0/000005.jsonl:1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("positions\n got %q\nwant %q", got, want)
	}
	if p.rest.File != "000005.jsonl" || p.rest.Line != 1 ||
		!slices.Equal(p.rest.Read, []string{"000001.jsonl", "000002.jsonl", "000003.jsonl", "000004.jsonl"}) {
		t.Errorf("state %v read=%q", p.rest, p.rest.Read)
	}
	// The late file was judged against the watermark its partition had
	// reached: 10:40 - 10m.
	if late := p.recs[3]; late.WatermarkBefore != rowtest.MS("2026-11-04T10:30:00Z") {
		t.Errorf("late record stamped %s", watermark.FormatMs(late.WatermarkBefore))
	}
}

func TestReaderStartPosition(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl", purchase("a", "2026-11-04T10:00:00Z")+"\n")
	put(t, dir, "p0", "000002.jsonl", purchase("b", "2026-11-04T10:10:00Z")+"\n"+purchase("c", "2026-11-04T10:20:00Z")+"\n")
	put(t, dir, "p0", "000003.jsonl", purchase("d", "2026-11-04T10:30:00Z")+"\n")
	first := len(purchase("b", "2026-11-04T10:10:00Z")) + 1
	fn := &readFn{Starts: []model.Checkpoint{{Partition: "p0", File: "000002.jsonl", Offset: int64(first), Line: 1}}}
	p := newRun(t, dir, "p0", false, 1000)
	p.rest = fn.CreateInitialRestriction("p0")
	p.drain()
	var got []string
	for _, r := range p.recs {
		got = append(got, r.Position)
	}
	if want := []string{"p0/000002.jsonl:2", "p0/000003.jsonl:1"}; !slices.Equal(got, want) {
		t.Errorf("positions %q, want %q", got, want)
	}
	if p.rest.FloorFiles != 1 {
		t.Errorf("FloorFiles = %d, want 1 (000001 below the start)", p.rest.FloorFiles)
	}
}

// TestReaderResumesFromCheckpoint: a reader reports a checkpoint at the end
// of every file, and a reader resumed from any of them (as a restart does,
// through FolderOptions.Resume) reads exactly the rest of the partition,
// each record with the WatermarkBefore of an uninterrupted read.
func TestReaderResumesFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl", purchase("a", "2026-11-04T10:00:00Z")+"\n"+purchase("b", "2026-11-04T10:30:00Z")+"\n")
	put(t, dir, "p0", "000002.jsonl", "\n"+purchase("c", "2026-11-04T10:05:00Z")+"\n{bad\n")
	put(t, dir, "p0", "000003.jsonl", purchase("d", "2026-11-04T11:30:00Z")+"\n"+purchase("e", "2026-11-04T10:50:00Z")+"\n")
	full := newRun(t, dir, "p0", false, 2)
	full.drain()
	want := []model.Checkpoint{
		{Partition: "p0", File: "000001.jsonl", Offset: int64(2 * (len(purchase("a", "2026-11-04T10:00:00Z")) + 1)), Line: 2, MaxValid: rowtest.MS("2026-11-04T10:30:00Z")},
		{Partition: "p0", File: "000002.jsonl", Offset: int64(1 + len(purchase("c", "2026-11-04T10:05:00Z")) + 1 + 5), Line: 3, MaxValid: rowtest.MS("2026-11-04T10:30:00Z")},
		{Partition: "p0", File: "000003.jsonl", Offset: int64(2 * (len(purchase("d", "2026-11-04T11:30:00Z")) + 1)), Line: 2, MaxValid: rowtest.MS("2026-11-04T11:30:00Z")},
	}
	if !slices.Equal(full.checkpoints, want) {
		t.Fatalf("checkpoints:\n got %+v\nwant %+v", full.checkpoints, want)
	}
	all := views(full.recs)
	for i, c := range want {
		o := FolderOptions{Watermark: testPolicy, Event: testConfig(), Resume: []model.Checkpoint{c}}
		_, starts, err := prepare(dir, o.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		resumed := newRun(t, dir, "p0", false, 1)
		resumed.rest = (&readFn{Starts: starts}).CreateInitialRestriction("p0")
		resumed.drain()
		skip := []int{2, 4, 6}[i] // records of the files up to and including c's
		if got := views(resumed.recs); !slices.Equal(got, all[skip:]) {
			t.Errorf("resumed after %s:\n got %+v\nwant %+v", c.File, got, all[skip:])
		}
		// The start file is opened at its end and reported again: the
		// same checkpoint, which the sink stores once.
		if got := resumed.checkpoints; !slices.Equal(got, want[i:]) {
			t.Errorf("resumed after %s: checkpoints %+v, want %+v", c.File, got, want[i:])
		}
	}
}

func TestReaderRemembersBoundedNames(t *testing.T) {
	dir := t.TempDir()
	n := maxRemembered + 40
	for i := range n {
		put(t, dir, "p0", fmt.Sprintf("%06d.jsonl", 2*i+2), purchase(fmt.Sprint(i), "2026-11-04T10:00:00Z")+"\n")
	}
	p := newRun(t, dir, "p0", true, 100000)
	p.drain()
	if len(p.recs) != n {
		t.Fatalf("read %d records, want %d", len(p.recs), n)
	}
	if len(p.rest.Read) > maxRemembered || p.rest.Floor == "" {
		t.Fatalf("state remembers %d names, floor %q", len(p.rest.Read), p.rest.Floor)
	}
	// A late file inside the remembered window is read; one below the
	// floor cannot be told from a read one and is not.
	inside := fmt.Sprintf("%06d.jsonl", 2*n-5)
	below := "000001.jsonl"
	put(t, dir, "p0", inside, purchase("inside", "2026-11-04T10:00:00Z")+"\n")
	put(t, dir, "p0", below, purchase("below", "2026-11-04T10:00:00Z")+"\n")
	put(t, dir, "p0", fmt.Sprintf("%06d.jsonl", 2*n+2), purchase("next", "2026-11-04T10:00:00Z")+"\n")
	p.drain()
	var got []string
	for _, r := range p.recs[n:] {
		got = append(got, r.Position)
	}
	want := []string{"p0/" + inside + ":1", fmt.Sprintf("p0/%06d.jsonl:1", 2*n+2)}
	if !slices.Equal(got, want) {
		t.Errorf("after the late files: %q, want %q", got, want)
	}
}

// follower returns one call of a follower of dir's partition p0 at *clock,
// with a 10s settle time, appending what it emits to *got; each call goes
// on from the last one's restriction, after set adjusts the reader.
func follower(t *testing.T, dir string, clock *time.Time, got *[]string) func(set func(*reader)) sdfread.Outcome {
	rest := newRestriction(clock.UnixMilli())
	return func(set func(*reader)) sdfread.Outcome {
		t.Helper()
		r := newReader(dir, "p0", rest, FolderOptions{Follow: true, Watermark: testPolicy, Event: testConfig()})
		r.source, r.o.Settle = t.Name(), 10*time.Second
		r.now = func() time.Time { return *clock }
		r.emit = func(rec model.Record) { *got = append(*got, rec.Position+"="+string(rec.Line)) }
		set(r)
		out, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		rest = r.rest
		return out
	}
}

// A followed file that ends in a line without a newline: the line is pending
// while the file changes, read once it has kept its size for the settle
// time, and read at once by a graceful stop's last pass (SPEC §3).
func TestReaderTailSettlesAndFinalPass(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl", purchase("a", "2026-11-04T10:00:00Z")+"\n"+`{"event_id":"b"`)
	clock := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []string
	step := follower(t, dir, &clock, &got)
	call := func(final bool) sdfread.Outcome { return step(func(r *reader) { r.final = final }) }
	pending := func() bool {
		_, ok := tails.Load(tailKey{source: t.Name(), partition: "p0", file: "000001.jsonl"})
		return ok
	}
	if out := call(false); out != sdfread.CaughtUp || len(got) != 1 || !pending() {
		t.Fatalf("first call: %v, %q, pending %v; want caught up, one line, the tail pending", out, got, pending())
	}
	clock = clock.Add(6 * time.Second)
	appendTo(t, dir, "p0", "000001.jsonl", `,"event_time":`) // still changing
	if call(false); len(got) != 1 {
		t.Fatalf("a growing tail was read: %q", got)
	}
	clock = clock.Add(6 * time.Second) // 6s unchanged: not yet
	if call(false); len(got) != 1 || !pending() {
		t.Fatalf("a tail unchanged for 6s of 10s was read: %q", got)
	}
	clock = clock.Add(5 * time.Second)
	if out := call(false); out != sdfread.CaughtUp || len(got) != 2 || got[1] != `p0/000001.jsonl:2={"event_id":"b","event_time":` || pending() {
		t.Fatalf("settled tail: %v, %q, pending %v", out, got, pending())
	}
	// The file stays current: what is appended later is read on.
	appendTo(t, dir, "p0", "000001.jsonl", "\n"+purchase("c", "2026-11-04T10:10:00Z")+"\n")
	if call(false); len(got) != 3 || got[2] != "p0/000001.jsonl:4="+purchase("c", "2026-11-04T10:10:00Z") {
		t.Fatalf("after the settled tail: %q", got)
	}

	// A graceful stop reads a pending tail at once, and no other file.
	appendTo(t, dir, "p0", "000001.jsonl", `{"torn":`)
	put(t, dir, "p0", "000002.jsonl", purchase("d", "2026-11-04T10:20:00Z")+"\n")
	if out := call(true); out != sdfread.Stopped || len(got) != 4 || got[3] != `p0/000001.jsonl:5={"torn":` {
		t.Fatalf("final pass: %v, %q", out, got)
	}
	if out := call(true); out != sdfread.Stopped || len(got) != 4 {
		t.Fatalf("second final pass read more: %v, %q", out, got)
	}
}

func TestReaderStopLostAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "a.jsonl", purchase("1", "2026-11-04T10:00:00Z")+"\n"+purchase("2", "2026-11-04T10:00:00Z")+"\n"+purchase("3", "2026-11-04T10:00:00Z")+"\n")

	r := newReader(dir, "p0", newRestriction(0), FolderOptions{Watermark: testPolicy, Event: testConfig()})
	r.stop = func() bool { return true }
	if out, err := r.run(); out != sdfread.Stopped || err != nil || r.emitted != 0 {
		t.Errorf("stopped reader: %v %v emitted %d", out, err, r.emitted)
	}

	r = newReader(dir, "p0", newRestriction(0), FolderOptions{Watermark: testPolicy, Event: testConfig()})
	claims := 0
	r.claim = func(restriction) bool { claims++; return claims <= 2 }
	if out, err := r.run(); out != sdfread.Lost || err != nil || r.emitted != 2 {
		t.Errorf("lost claim: %v %v emitted %d", out, err, r.emitted)
	}

	rest := newRestriction(0)
	rest.File, rest.Offset, rest.Line = "0.jsonl", 10, 1 // removed under the reader
	p := newRun(t, dir, "p0", false, 1000)
	p.rest = rest
	if out := p.drain(); out != sdfread.Finished || len(p.recs) != 3 {
		t.Errorf("after a missing file: %v, %d records", out, len(p.recs))
	}
}

func TestReaderIdleness(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "a.jsonl", purchase("1", "2026-11-04T10:20:00Z")+"\n")
	clock := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)
	rest := newRestriction(clock.UnixMilli())
	call := func() *reader {
		r := newReader(dir, "p0", rest, FolderOptions{Follow: true, Watermark: testPolicy, Event: testConfig()})
		r.now = func() time.Time { return clock }
		if _, err := r.run(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := call()
	if r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || r.rest.Idle || r.rest.Reported != rowtest.MS("2026-11-04T10:10:00Z") {
		t.Fatalf("active: %v", r.rest)
	}
	rest = r.rest

	clock = clock.Add(testPolicy.IdleTimeout - time.Millisecond)
	r = call()
	if r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || r.rest.Idle {
		t.Fatalf("idle one ms early: %v", r.rest)
	}
	rest = r.rest

	clock = clock.Add(time.Millisecond)
	r = call()
	if !r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || !r.rest.Idle || r.rest.Reported != clock.Add(-testPolicy.OutOfOrderBound).UnixMilli() {
		t.Fatalf("idle: %v", r.rest)
	}
	rest = r.rest
	idleReported := rest.Reported

	// The partition comes back with an old record: active again, stamped
	// with its own event-time watermark, and the reported watermark does
	// not go back.
	clock = clock.Add(time.Second)
	put(t, dir, "p0", "b.jsonl", purchase("2", "2026-11-04T10:00:00Z")+"\n")
	var recs []model.Record
	r = newReader(dir, "p0", rest, FolderOptions{Follow: true, Watermark: testPolicy, Event: testConfig()})
	r.now = func() time.Time { return clock }
	r.emit = func(rec model.Record) { recs = append(recs, rec) }
	if _, err := r.run(); err != nil {
		t.Fatal(err)
	}
	if r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || r.rest.Idle || r.rest.Reported != idleReported {
		t.Fatalf("back: %v", r.rest)
	}
	if len(recs) != 1 || recs[0].WatermarkBefore != rowtest.MS("2026-11-04T10:10:00Z") {
		t.Fatalf("returning record %+v", recs)
	}
}

func TestReaderIOErrors(t *testing.T) {
	dir := t.TempDir() // no partition folder "p0": listing it fails
	r := newReader(dir, "p0", newRestriction(0), FolderOptions{Watermark: testPolicy, Event: testConfig()})
	if _, err := r.run(); err == nil || !strings.Contains(err.Error(), `partition "p0"`) {
		t.Errorf("replay: error %v, want one naming the partition", err)
	}
	r = newReader(dir, "p0", newRestriction(0), FolderOptions{Follow: true, Watermark: testPolicy, Event: testConfig()})
	if out, err := r.run(); err != nil || out != sdfread.CaughtUp {
		t.Errorf("follow: %v, %v; want caught up, to try again at the next poll", out, err)
	}
}

// TestReaderKeepsRemoteFileOpen: on a remote filesystem (memfs here), a
// reader's next call goes on with the file the previous call ended in
// instead of streaming it again from its start, and reads the same records
// as a local read; a call at another mark opens the file afresh.
func TestReaderKeepsRemoteFileOpen(t *testing.T) {
	dir := "memfs://" + t.Name()
	local := t.TempDir()
	var content string
	for i := range 50 {
		content += purchase(fmt.Sprintf("e%d", i), "2026-11-04T10:00:00Z") + "\n"
	}
	memfs.Write(dir+"/p0/000001.jsonl", []byte(content))
	put(t, local, "p0", "000001.jsonl", content)

	remote := newRun(t, dir, "p0", false, 7)
	open := newOpenFiles()
	for range 100 {
		r := newReader(remote.dir, "p0", remote.rest, FolderOptions{Watermark: testPolicy, Event: remote.cfg})
		r.o.MaxPerCall, r.open = 7, open
		r.emit = func(rec model.Record) { remote.recs = append(remote.recs, rec) }
		out, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		remote.rest = r.rest
		if out == sdfread.Finished {
			break
		}
	}
	want := newRun(t, local, "p0", false, 7)
	want.drain()
	got, wantViews := views(remote.recs), views(want.recs)
	for i := range got {
		got[i].Position, wantViews[i].Position = "", ""
	}
	if !slices.Equal(got, wantViews) || len(got) != 50 {
		t.Errorf("remote read in calls of 7 records differs from the local read: %d records, want %d", len(got), len(wantViews))
	}
	if open.hits != 7 { // 8 calls hold records; all but the first go on with the kept file
		t.Errorf("kept file reused %d times, want 7", open.hits)
	}
	if lr, c, err := open.open("p0", dir+"/p0/000001.jsonl", rawlog.Mark{}, 0); err != nil || lr == nil {
		t.Fatalf("open at the start: %v", err)
	} else {
		c.Close()
	}
}

// TestReaderUnreachableFolderIsNotIdle: a follower whose partition cannot be
// listed (a filesystem outage: here the folder is replaced by a plain file)
// learns nothing about its producers, so the failed calls count as activity,
// as the Pub/Sub source's failed pulls do: past the idle timeout it neither
// turns idle nor hands the runner processing time, which would close the
// windows its backlog fills once the folder is back. A folder that is gone
// (fs.ErrNotExist) is no outage: it goes idle.
func TestReaderUnreachableFolderIsNotIdle(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "a.jsonl", purchase("1", "2026-11-04T10:20:00Z")+"\n")
	clock := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)
	rest := newRestriction(clock.UnixMilli())
	call := func() *reader {
		t.Helper()
		r := newReader(dir, "p0", rest, FolderOptions{Follow: true, Watermark: testPolicy, Event: testConfig()})
		r.now = func() time.Time { return clock }
		if out, err := r.run(); err != nil || out != sdfread.CaughtUp {
			t.Fatalf("run: %v, %v", out, err)
		}
		return r
	}
	r := call()
	if r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || r.rest.Idle {
		t.Fatalf("active: %v", r.rest)
	}
	rest = r.rest
	active := rest.Reported

	pdir := filepath.Join(dir, "p0")
	if err := os.Rename(pdir, filepath.Join(dir, ".p0.away")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pdir, nil, 0o644); err != nil { // listing it fails: not a directory
		t.Fatal(err)
	}
	clock = clock.Add(2 * testPolicy.IdleTimeout)
	r = call()
	if r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || r.rest.Idle || r.rest.Reported != active {
		t.Fatalf("unreachable for twice the idle timeout: %v, want active at %s", r.rest, watermark.FormatMs(active))
	}
	rest = r.rest

	// Gone: nothing more will come from it.
	if err := os.Remove(pdir); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * testPolicy.IdleTimeout)
	r = call()
	if !r.watermarkState(clock.UnixMilli(), model.NoWatermark, false) || !r.rest.Idle {
		t.Fatalf("gone for twice the idle timeout: %v, want idle", r.rest)
	}
}

// TestReaderRemoteTailSeesTheObjectChange: the settle rule on an object store.
// A followed remote file ending in a line without a newline is rewritten
// (an object store's append is a new object) with that line completed and
// another one: the reader must read the new content, not settle on the view of
// the stream the previous call kept open (which still ends in the torn line),
// read the torn line as a line (quarantined) and never read the rest.
func TestReaderRemoteTailSeesTheObjectChange(t *testing.T) {
	dir := "memfs://" + t.Name()
	path := dir + "/p0/000001.jsonl"
	a, b, c := purchase("a", "2026-11-04T10:00:00Z"), purchase("b", "2026-11-04T10:05:00Z"), purchase("c", "2026-11-04T10:10:00Z")
	memfs.Write(path, []byte(a+"\n"+b[:10]))
	clock := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	open := newOpenFiles()
	defer open.closeAll()
	var got []string
	step := follower(t, dir, &clock, &got)
	call := func() sdfread.Outcome { return step(func(r *reader) { r.open = open }) }
	if out := call(); out != sdfread.CaughtUp || len(got) != 1 {
		t.Fatalf("first call: %v, %q; want caught up, one line, the tail pending", out, got)
	}
	memfs.Write(path, []byte(a+"\n"+b+"\n"+c+"\n")) // the producer finishes its line
	clock = clock.Add(11 * time.Second)
	call()
	want := []string{"p0/000001.jsonl:1=" + a, "p0/000001.jsonl:2=" + b, "p0/000001.jsonl:3=" + c}
	if !slices.Equal(got, want) {
		t.Fatalf("after the object changed:\n got %q\nwant %q", got, want)
	}
}
