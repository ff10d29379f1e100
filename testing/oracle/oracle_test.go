package oracle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/triggers"
)

// replayNow is after every generated or handcrafted event time.
var replayNow = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

var ms = rowtest.MS

func ev(id, ts, amount string) string {
	return fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":"u7","amount":%q}`, id, ts, amount)
}

func writeLog(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func checkTotals(t *testing.T, what string, got, want map[Key]Total) {
	t.Helper()
	if d := Diff(want, got); d != nil {
		t.Errorf("%s differ:\n  %s\nwant:\n%sgot:\n%s", what, strings.Join(d, "\n  "), Format(want), Format(got))
	}
}

// TestMinimalSequence is SPEC §7's minimal sequence as a one-partition log.
func TestMinimalSequence(t *testing.T) {
	lines := []string{
		ev("A", "2026-11-04T10:15:00Z", "100"),    // 1
		ev("B", "2026-11-04T10:30:00Z", "50"),     // 2
		ev("A", "2026-11-04T10:15:00Z", "100.00"), // 3 identical copy of A (same content, other bytes)
		"",                                           // 4 blank: skipped, still numbered
		ev("E1", "2026-11-04T11:15:00Z", "10"),       // 5 watermark 11:05: past 11:00 → ON_TIME 150
		ev("C", "2026-11-04T10:50:00Z", "20"),        // 6 within lateness → LATE 170
		ev("A", "2026-11-04T10:15:00Z", "120"),       // 7 second payload for A → conflict
		ev("E2", "2026-11-05T11:15:00Z", "5"),        // 8 watermark passes 11:00 + 24h → FINAL 170
		ev("D", "2026-11-04T10:10:00Z", "30") + "\r", // 9 too late (CRLF line)
		ev("A", "2026-11-04T10:15:00Z", "100"),       // 10 a copy, but the window is closed: too late
		`{"event_id":"Q","event_time":"2026-11-04T10:20:00Z","user_id":"u7"}`, // 11 missing amount
	}
	dir := writeLog(t, map[string]string{"p0/000001.jsonl": strings.Join(lines, "\n") + "\n"})
	res, err := Replay(dir, DefaultSettings(replayNow))
	if err != nil {
		t.Fatal(err)
	}
	w10, w11, w11b := ms("2026-11-04T10:00:00Z"), ms("2026-11-04T11:00:00Z"), ms("2026-11-05T11:00:00Z")
	checkTotals(t, "Final", res.Final, map[Key]Total{
		{w10, "{}"}:  {170_000_000, 3},
		{w11, "{}"}:  {10_000_000, 1},
		{w11b, "{}"}: {5_000_000, 1},
	})
	checkTotals(t, "Distinct", res.Distinct, map[Key]Total{
		{w10, "{}"}:  {200_000_000, 4}, // D is in the raw log: reconcile finds it
		{w11, "{}"}:  {10_000_000, 1},
		{w11b, "{}"}: {5_000_000, 1},
	})
	if res.Read != 10 || res.Counted != 5 || res.Duplicates != 1 || res.Blank != 1 {
		t.Errorf("read %d counted %d duplicates %d blank %d", res.Read, res.Counted, res.Duplicates, res.Blank)
	}
	if err := res.Conserved(); err != nil {
		t.Error(err)
	}
	var tl []string
	for _, r := range res.TooLate {
		tl = append(tl, r.Position+" "+r.EventID+" "+r.Reason)
	}
	if want := []string{"p0/000001.jsonl:9 D window_closed", "p0/000001.jsonl:10 A window_closed"}; !slices.Equal(tl, want) {
		t.Errorf("too late = %q, want %q", tl, want)
	}
	if !strings.HasSuffix(string(res.TooLate[0].Payload), `"30"}`) {
		t.Errorf("too-late payload %q: the CR must be stripped", res.TooLate[0].Payload)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Position != "p0/000001.jsonl:7" || res.Conflicts[0].EventID != "A" ||
		res.Conflicts[0].FirstFingerprint == res.Conflicts[0].ConflictingFingerprint {
		t.Errorf("conflicts = %+v", res.Conflicts)
	}
	if len(res.Quarantined) != 1 || res.Quarantined[0].Reason != model.ReasonMissingField || res.Quarantined[0].Position != "p0/000001.jsonl:11" {
		t.Errorf("quarantined = %+v", res.Quarantined)
	}
}

// TestSparkWatermarkDemo is SPEC §7's second scenario, over in-memory
// records: where Spark drops 07:40:00 silently, it is too late here.
func TestSparkWatermarkDemo(t *testing.T) {
	s := DefaultSettings(replayNow)
	s.Triggers = triggers.Policy{Window: 5 * time.Minute, AllowedLateness: 0}
	s.Watermark.OutOfOrderBound = 10 * time.Minute
	var recs []model.Record
	for i, ts := range []string{"2026-11-04T08:01:10Z", "2026-11-04T08:01:40Z", "2026-11-04T07:58:00Z", "2026-11-04T07:40:00Z"} {
		recs = append(recs, model.Record{Line: []byte(ev(fmt.Sprint("e", i), ts, "1"))})
	}
	res := ReplayRecords(map[string][]model.Record{"p0": recs}, s)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	checkTotals(t, "Final", res.Final, map[Key]Total{
		{ms("2026-11-04T08:00:00Z"), "{}"}: {2_000_000, 2},
		{ms("2026-11-04T07:55:00Z"), "{}"}: {1_000_000, 1},
	})
	if len(res.TooLate) != 1 || res.TooLate[0].EventID != "e3" || res.TooLate[0].Position != "p0/records:4" {
		t.Fatalf("too late = %+v", res.TooLate)
	}
	if err := res.Conserved(); err != nil {
		t.Error(err)
	}
}

// TestCrossPartitionFirstCopy: an id whose every copy is too late takes the
// lowest source position in Distinct; a counted copy wins over earlier
// too-late ones.
func TestCrossPartitionFirstCopy(t *testing.T) {
	push := ev("push", "2026-11-06T00:00:00Z", "1") // closes everything on 11-04
	dir := writeLog(t, map[string]string{
		"p1/000001.jsonl": push + "\n" + ev("X", "2026-11-04T10:00:00Z", "7") + "\n",
		"p0/000001.jsonl": push[:len(push)-1] + `,"x":1}` + "\n" + ev("X", "2026-11-04T10:30:00Z", "9") + "\n" +
			ev("Y", "2026-11-04T10:00:00Z", "3") + "\n" + ev("Y", "2026-11-05T23:55:00Z", "4") + "\n",
	})
	res, err := Replay(dir, DefaultSettings(replayNow))
	if err != nil {
		t.Fatal(err)
	}
	w10, w23, w0 := ms("2026-11-04T10:00:00Z"), ms("2026-11-05T23:00:00Z"), ms("2026-11-06T00:00:00Z")
	checkTotals(t, "Distinct", res.Distinct, map[Key]Total{
		{w10, "{}"}: {9_000_000, 1}, // X: p0's copy, the lowest position
		{w23, "{}"}: {4_000_000, 1}, // Y: the counted copy, though a too-late one came first
		{w0, "{}"}:  {1_000_000, 1}, // push: p0's counted, p1's is a duplicate
	})
	if len(res.TooLate) != 3 || res.Duplicates != 1 {
		t.Errorf("too late %d, duplicates %d", len(res.TooLate), res.Duplicates)
	}
}

func TestInvalidSettings(t *testing.T) {
	s := DefaultSettings(time.Time{})
	if res := ReplayRecords(nil, s); res.Err == nil {
		t.Error("zero Now accepted")
	}
	s = DefaultSettings(replayNow)
	s.Triggers.Window = 0
	if _, err := Replay(t.TempDir(), s); err == nil {
		t.Error("zero window accepted")
	}
}

// TestDemo replays the demo log and holds it to the generator's own
// account, line kind by line kind and window by window: two independent
// computations of the same contract.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and replays the demo log")
	}
	c := gen.Demo()
	dir := filepath.Join(t.TempDir(), "demo")
	st, err := gen.Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	// Any bound up to the generator's margin gives the same verdicts.
	for _, bound := range []time.Duration{0, 10 * time.Minute, c.Margin()} {
		t.Run(bound.String(), func(t *testing.T) {
			s := DefaultSettings(replayNow)
			s.Watermark.OutOfOrderBound = bound
			res, err := Replay(dir, s)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstStats(t, res, st)
		})
	}
}

func checkAgainstStats(t *testing.T, res Result, st gen.Stats) {
	t.Helper()
	if err := res.Conserved(); err != nil {
		t.Error(err)
	}
	if res.Read != st.Lines-st.Blank || res.Blank != st.Blank {
		t.Errorf("read %d blank %d, want %d and %d", res.Read, res.Blank, st.Lines-st.Blank, st.Blank)
	}
	if res.Counted != st.Events-st.TooLateEvents || res.Duplicates != st.Duplicates ||
		len(res.Conflicts) != st.Conflicts || len(res.TooLate) != st.TooLate || len(res.Quarantined) != st.Malformed {
		t.Errorf("counted %d duplicates %d conflicts %d too_late %d quarantined %d; stats %+v",
			res.Counted, res.Duplicates, len(res.Conflicts), len(res.TooLate), len(res.Quarantined), st)
	}
	reasons := map[string]int{}
	for _, q := range res.Quarantined {
		reasons[q.Reason]++
	}
	if fmt.Sprint(reasons) != fmt.Sprint(st.MalformedKinds) {
		t.Errorf("quarantine reasons %v, generator wrote %v", reasons, st.MalformedKinds)
		for _, q := range res.Quarantined {
			t.Logf("%s %s %s: %.120s", q.Position, q.Reason, q.Detail, q.Payload)
		}
	}
	checkTotals(t, "Final", res.Final, fromGen(st.Counted))
	checkTotals(t, "Distinct", res.Distinct, fromGen(st.All))
	for _, w := range st.MissingWindows {
		if _, ok := res.Final[Key{w, "{}"}]; ok {
			t.Errorf("missing window %s has a FINAL row", model.FormatTime(w))
		}
	}
	if len(res.Unterminated) > 0 {
		t.Errorf("unterminated lines: %v", res.Unterminated)
	}
	if !slices.IsSortedFunc(res.TooLate, func(a, b model.TooLate) int { return rawlog.ComparePositions(a.Position, b.Position) }) {
		t.Error("too-late records not sorted by position")
	}
}

func fromGen(m map[int64]gen.Total) map[Key]Total {
	out := map[Key]Total{}
	for w, v := range m {
		out[Key{w, "{}"}] = Total{v.RevenueMicros, v.Count}
	}
	return out
}

// TestDimensions: splitting by dimensions partitions the same totals.
func TestDimensions(t *testing.T) {
	c := gen.Demo()
	c.Events = 3000
	c.MaxLine = 4096
	dir := filepath.Join(t.TempDir(), "log")
	st, err := gen.Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings(replayNow)
	s.Event.Dimensions = []string{"platform", "country"}
	s.Event.MaxLine = c.MaxLine
	res, err := Replay(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Conserved(); err != nil {
		t.Error(err)
	}
	rolled := map[Key]Total{}
	for k, v := range res.Final {
		if !strings.HasPrefix(k.Dims, `{"country":"`) {
			t.Fatalf("dims %s: want sorted keys", k.Dims)
		}
		r := rolled[Key{k.WindowStart, "{}"}]
		rolled[Key{k.WindowStart, "{}"}] = Total{r.RevenueMicros + v.RevenueMicros, r.Count + v.Count}
	}
	checkTotals(t, "Final rolled up over dimensions", rolled, fromGen(st.Counted))
}

// TestReplayRecordsMatchesReplay: the in-memory path reads the same.
func TestReplayRecordsMatchesReplay(t *testing.T) {
	c := gen.Demo()
	c.Events = 3000
	c.MaxLine = 4096
	dir := filepath.Join(t.TempDir(), "log")
	if _, err := gen.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings(replayNow)
	s.Event.MaxLine = c.MaxLine
	a, err := Replay(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ReadPartitions(dir, s.Event.MaxLine, s.Now)
	if err != nil {
		t.Fatal(err)
	}
	b := ReplayRecords(parts, s)
	if b.Err != nil {
		t.Fatal(b.Err)
	}
	b.Blank = a.Blank // blank lines never reach ReadPartitions' records
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("Replay and ReplayRecords disagree")
	}
}

func BenchmarkOracle1M(b *testing.B) {
	const n = 1_000_000
	dir := filepath.Join(b.TempDir(), "log")
	st, err := gen.Write(dir, BenchLog(n))
	if err != nil {
		b.Fatal(err)
	}
	s := DefaultSettings(replayNow)
	b.ResetTimer()
	for b.Loop() {
		res, err := Replay(dir, s)
		if err != nil {
			b.Fatal(err)
		}
		if res.Read != st.Lines-st.Blank {
			b.Fatalf("read %d, want %d", res.Read, st.Lines-st.Blank)
		}
	}
	b.ReportMetric(float64(st.Lines-st.Blank)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestGeneratorSeeds holds many generated shapes to the generator's own
// account: the generator's placement guarantees and the oracle's rules must
// agree exactly, whatever the seed.
func TestGeneratorSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("generates many logs")
	}
	for seed := int64(1); seed <= 12; seed++ {
		c := gen.Demo()
		c.Seed = seed
		c.Events = 1500 + int(seed)*250
		c.Partitions = 1 + int(seed)%5
		c.FilesPerPartition = 1 + int(seed)%4
		c.IdlePartition = int(seed)%(c.Partitions+1) - 1
		c.DupRate, c.ConflictRate, c.LateRate, c.TooLateRate, c.MalformedRate = 0.1, 0.05, 0.05, 0.02, 0.01
		c.MaxLine = 2048
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			st, err := gen.Write(dir, c)
			if err != nil {
				t.Fatal(err)
			}
			s := DefaultSettings(replayNow)
			s.Event.MaxLine = c.MaxLine
			res, err := Replay(dir, s)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstStats(t, res, st)
		})
	}
}

// TestReadPartitions: a last line without a newline is a line; ReadAt is now.
func TestReadPartitions(t *testing.T) {
	dir := writeLog(t, map[string]string{"p0/000001.jsonl": "l1\n\nl3\n", "p0/000002.jsonl": "m1\ntorn"})
	parts, err := ReadPartitions(dir, 0, time.UnixMilli(7))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts["p0"]) != 4 || string(parts["p0"][3].Line) != "torn" || parts["p0"][0].ReadAt != 7 {
		t.Errorf("ReadPartitions = %+v", parts)
	}
}
