package reconcile_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

// genLog writes a Demo-shaped log: 4 partitions over 30 hours, retries,
// conflicts, late and too-late uploads, an idle partition and one window
// reached only by too-late events.
func genLog(t *testing.T, events int) (string, gen.Stats) {
	t.Helper()
	c := gen.Demo()
	c.Events = events
	c.MaxLine = 4096
	dir := filepath.Join(t.TempDir(), "log")
	st, err := gen.Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

func replay(t *testing.T, dir string, dims ...string) oracle.Result {
	t.Helper()
	s := oracle.DefaultSettings(readAt)
	s.Event.MaxLine = 4096
	s.Event.Dimensions = dims
	res, err := oracle.Replay(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Conserved(); err != nil {
		t.Fatal(err)
	}
	return res
}

// The acceptance test: stream a generated multi-partition log with
// too-late uploads, reconcile with --apply, and the current rows equal an
// independent recomputation of every distinct valid event; a second run
// writes nothing.
func TestApplyConvergesToDistinct(t *testing.T) {
	dir, gs := genLog(t, 3000)
	for _, dims := range [][]string{nil, {"country", "platform"}} {
		t.Run("dims="+strings.Join(dims, ","), func(t *testing.T) {
			res := replay(t, dir, dims...)
			if len(res.TooLate) == 0 || len(res.Conflicts) == 0 || len(gs.MissingWindows) == 0 {
				t.Fatalf("log lacks too-late events (%d), conflicts (%d) or a missing window (%v)",
					len(res.TooLate), len(res.Conflicts), gs.MissingWindows)
			}
			sink, path := openSink(t, dims...)
			writeStream(t, sink, res, streamed(res.Final, time.Hour))
			before := len(changelog(t, sink))

			o := options(dir, path, "run1", dims...)
			o.Apply = true
			out := run(t, o)
			// Every difference explained and written: nothing material left.
			if got := out.ExitCode(); got != reconcile.ExitClean {
				t.Errorf("exit code = %d, want %d", got, reconcile.ExitClean)
			}
			// Every difference is explained: a key the stream has a FINAL row
			// for differs by its too-late events; a key it has none for (all
			// of its events too late, among them the generator's window
			// reached only by too-late events) is a missing window.
			missing := map[int64]bool{}
			for _, d := range out.Diffs {
				k := oracle.Key{WindowStart: d.WindowStart, Dims: d.Dims}
				want := reconcile.ClassTooLate
				if _, streamed := res.Final[k]; !streamed {
					want, missing[d.WindowStart] = reconcile.ClassMissingWindow, true
				}
				if d.Classification != want || !d.Material {
					t.Errorf("%s: classification %q material %v, want %q material", d.Key, d.Classification, d.Material, want)
				}
				if got := (oracle.Total{RevenueMicros: d.Recomputed.RevenueMicros, Count: d.Recomputed.Count}); got != res.Distinct[k] {
					t.Errorf("%s: recomputed %s, oracle %s", d.Key, got, res.Distinct[k])
				}
			}
			for _, w := range gs.MissingWindows {
				if !missing[w] {
					t.Errorf("no missing_window diff for %s among %v", model.FormatTime(w), keysOf(out.Diffs))
				}
			}
			// Conflicts are reported, not summed: each id in conflict_events
			// is counted once, with the payload the stream counted.
			conflictIDs := map[string]bool{}
			for _, c := range res.Conflicts {
				conflictIDs[c.EventID] = true
			}
			if out.Stats.ByStreamFingerprint != int64(len(conflictIDs)) || out.Stats.ConflictingCopies < int64(len(res.Conflicts)) {
				t.Errorf("conflicts: %d ids chosen by the stream's fingerprint, want %d; %d conflicting copies, oracle %d",
					out.Stats.ByStreamFingerprint, len(conflictIDs), out.Stats.ConflictingCopies, len(res.Conflicts))
			}
			if out.Stats.Read != int64(res.Read) || out.Stats.QuarantinedTotal() != int64(len(res.Quarantined)) {
				t.Errorf("read %d records (%d quarantined), oracle %d (%d)", out.Stats.Read, out.Stats.QuarantinedTotal(), res.Read, len(res.Quarantined))
			}

			got := current(t, sink)
			if d := oracle.Diff(res.Distinct, got); d != nil {
				t.Fatalf("after --apply the current rows differ from the oracle's Distinct:\n%s\nwant:\n%s\ngot:\n%s",
					strings.Join(d, "\n"), oracle.Format(res.Distinct), oracle.Format(got))
			}
			log := changelog(t, sink)
			var corrections []model.Row
			for _, r := range log {
				if r.Writer == "reconcile:run1" {
					corrections = append(corrections, r)
				}
			}
			if len(corrections) != out.Applied || out.Applied != len(out.Diffs) || len(log) != before+out.Applied {
				t.Errorf("changelog: %d rows by reconcile:run1, %d applied, %d diffs, %d -> %d rows",
					len(corrections), out.Applied, len(out.Diffs), before, len(log))
			}
			for _, r := range corrections {
				if r.State != model.Final {
					t.Errorf("correction %s is %v, want FINAL", r.Key(), r.State)
				}
			}
			stored := diffsOf(t, sink, "run1")
			if len(stored) != len(out.Diffs) {
				t.Errorf("reconcile_diffs has %d rows for run1, want %d", len(stored), len(out.Diffs))
			}
			for _, d := range stored {
				if d.AppliedRevision == nil {
					t.Errorf("reconcile_diffs %s %s: applied_revision NULL after --apply", model.FormatTime(d.WindowStart), d.Dims)
				}
			}

			// The second run finds nothing and changes nothing.
			o.RunID = "run2"
			again := run(t, o)
			if got := again.ExitCode(); got != reconcile.ExitClean {
				t.Errorf("second run: exit code = %d, want 0; diffs %v", got, keysOf(again.Diffs))
			}
			if n := len(changelog(t, sink)); n != len(log) || again.Applied != 0 {
				t.Errorf("second run wrote %d changelog rows (applied %d)", n-len(log), again.Applied)
			}
			if d := diffsOf(t, sink, "run2"); len(d) != 0 {
				t.Errorf("second run wrote %d reconcile_diffs rows", len(d))
			}
			if again.Checked != len(res.Distinct) {
				t.Errorf("second run checked %d windows, want %d", again.Checked, len(res.Distinct))
			}
		})
	}
}

// A FINAL row the stream got wrong and a window the sink lost are both
// found and unexplained (the lost window's events were counted, not too
// late), and --apply repairs them — including a correction that lowers the
// count — while the run still exits 1: a human must look.
func TestCorruptedRowAndMissingWindow(t *testing.T) {
	dir, _ := genLog(t, 600)
	res := replay(t, dir)
	keys := slices.SortedFunc(func(yield func(oracle.Key) bool) {
		for k := range res.Final {
			if !yield(k) {
				return
			}
		}
	}, func(a, b oracle.Key) int { return int(a.WindowStart - b.WindowStart) })
	corrupt, lost := keys[3], keys[5]

	final := map[oracle.Key]oracle.Total{}
	for k, v := range res.Final {
		final[k] = v
	}
	delete(final, lost)
	v := final[corrupt]
	v.RevenueMicros += 1_000_000 // one unit too much, one event too many
	v.Count++
	final[corrupt] = v
	sink, path := openSink(t)
	writeStream(t, sink, res, streamed(final, time.Hour))

	dry := run(t, options(dir, path, "dry"))
	if got := dry.ExitCode(); got != reconcile.ExitUnexplained {
		t.Fatalf("exit code = %d, want 1", got)
	}
	byKey := map[oracle.Key]reconcile.Diff{}
	for _, d := range dry.Diffs {
		byKey[oracle.Key{WindowStart: d.WindowStart, Dims: d.Dims}] = d
	}
	if d := byKey[corrupt]; d.Classification != reconcile.ClassUnexplained || d.DeltaMicros() != -1_000_000 || d.DeltaCount() != -1 {
		t.Errorf("corrupted %s: %+v, want unexplained, delta -1.000000, -1 event", corrupt, d)
	}
	if d := byKey[lost]; d.Classification != reconcile.ClassUnexplained || d.HasRow {
		t.Errorf("lost %s: %+v, want unexplained", lost, d)
	}
	if n := len(diffsOf(t, sink, "dry")); n != len(dry.Diffs) {
		t.Errorf("reconcile_diffs: %d rows, want %d", n, len(dry.Diffs))
	}
	for _, d := range diffsOf(t, sink, "dry") {
		if d.AppliedRevision != nil {
			t.Errorf("dry run: applied_revision set on %s", model.FormatTime(d.WindowStart))
		}
	}
	if got := current(t, sink); got[corrupt] != final[corrupt] {
		t.Errorf("a dry run changed %s", corrupt)
	}

	o := options(dir, path, "fix")
	o.Apply = true
	fixed := run(t, o)
	if fixed.ExitCode() != reconcile.ExitUnexplained || fixed.Applied != len(fixed.Diffs) {
		t.Errorf("apply: exit %d, %d of %d applied", fixed.ExitCode(), fixed.Applied, len(fixed.Diffs))
	}
	if d := oracle.Diff(res.Distinct, current(t, sink)); d != nil {
		t.Errorf("after --apply:\n%s", strings.Join(d, "\n"))
	}
	for _, r := range changelog(t, sink) {
		switch (oracle.Key{WindowStart: r.WindowStart, Dims: r.Dims}) {
		case corrupt:
			if r.Writer == "reconcile:fix" && (r.Revision != 3 || r.EventCount != res.Distinct[corrupt].Count) {
				t.Errorf("correction of %s: revision %d count %d", corrupt, r.Revision, r.EventCount)
			}
		case lost:
			if r.Revision != 1 || r.Writer != "reconcile:fix" || r.State != model.Final {
				t.Errorf("lost window row: %+v, want revision 1 FINAL by reconcile:fix", r)
			}
		}
	}
	if again := run(t, options(dir, path, "again")); again.ExitCode() != reconcile.ExitClean {
		t.Errorf("after --apply: exit %d, diffs %v", again.ExitCode(), keysOf(again.Diffs))
	}
}

// SPEC §6: for an id with several payloads, the one the stream counted (its
// first_fingerprint in conflict_events), else the lowest source_position;
// never the sum, never the last.
func TestConflictsReportedNotSummed(t *testing.T) {
	aCounted := purchase("A", "2026-11-04T10:15:00Z", "u1", "120")
	aOther := purchase("A", "2026-11-04T10:15:00Z", "u1", "100")
	c7 := purchase("C", "2026-11-04T10:30:00Z", "u3", "7")
	c8 := purchase("C", "2026-11-04T10:30:00Z", "u3", "8")
	dir := writeLog(t, map[string][]string{
		"p0": {
			aOther, // lowest position, but the stream counted p1's copy
			purchase("B", "2026-11-04T10:20:00Z", "u2", "50"),
			c7,
			c8, // conflict, not counted
			purchase("D", "2026-11-04T10:40:00Z", "u4", "6"), // lowest position of D
			purchase("Z", "2026-11-05T12:00:00Z", "u9", "1"), // moves the log's watermark on
		},
		"p1": {
			aCounted,
			purchase("D", "2026-11-04T10:40:00Z", "u4", "5"),
		},
	})
	sink, path := openSink(t)
	ctx := context.Background()
	_, err := sink.Write(ctx, batch(
		[]model.Row{row(t, "2026-11-04T10:00:00Z", "177", 3, 2, model.Final), row(t, "2026-11-05T12:00:00Z", "1", 1, 2, model.Final)},
		[]model.Conflict{
			{Position: "p0/a.jsonl:1", EventID: "A", FirstFingerprint: fingerprint(t, aCounted), ConflictingFingerprint: fingerprint(t, aOther), Payload: []byte(aOther)},
			{Position: "p0/a.jsonl:4", EventID: "C", FirstFingerprint: fingerprint(t, c7), ConflictingFingerprint: fingerprint(t, c8), Payload: []byte(c8)},
		}))
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, options(dir, path, "r"))
	// A counts 120 (the stream's), C counts 7, B 50: the streamed 177. D had
	// two payloads and no conflict row (the stream never counted it): the
	// lowest position, p0's 6, not 5 and not 11.
	if len(out.Diffs) != 1 {
		t.Fatalf("diffs = %v, want one for D", keysOf(out.Diffs))
	}
	d := out.Diffs[0]
	if d.Recomputed.RevenueMicros != 183_000_000 || d.Recomputed.Count != 4 || d.Classification != reconcile.ClassUnexplained {
		t.Errorf("diff = %+v, want recomputed 183.000000 (4 events), unexplained", d)
	}
	st := out.Stats
	if st.ConflictingIDs != 3 || st.ConflictingCopies != 3 || st.ByStreamFingerprint != 2 || st.ByLowestPosition != 1 || st.IDs != 5 {
		t.Errorf("stats = %+v, want 5 ids, 3 conflicting (3 copies), 2 by the stream's fingerprint, 1 by lowest position", st)
	}
}

// Rows not yet FINAL, and missing rows of windows the stream has not closed,
// are reported apart: never material, never written, never applied.
func TestOpenWindowsReportedSeparately(t *testing.T) {
	dir, path, sink := openScenario(t)
	o := options(dir, path, "open")
	o.Apply = true
	before := len(changelog(t, sink))
	out := run(t, o)
	if out.ExitCode() != reconcile.ExitClean || out.Checked != 1 || out.OpenChecked != 2 || len(out.Open) != 2 || len(out.Diffs) != 0 {
		t.Errorf("exit %d, checked %d, open %d (%d differing), diffs %v; want 0, 1, 2 (2), none",
			out.ExitCode(), out.Checked, out.OpenChecked, len(out.Open), keysOf(out.Diffs))
	}
	if n := len(changelog(t, sink)); n != before {
		t.Errorf("--apply wrote %d rows for open windows", n-before)
	}
	if n := len(diffsOf(t, sink, "open")); n != 0 {
		t.Errorf("%d reconcile_diffs rows for open windows", n)
	}
}

// --from/--to and --date select windows by window_start; by default only
// windows present in the raw log are checked.
func TestRange(t *testing.T) {
	var lines []string
	for _, h := range []string{"10", "11", "12", "13"} {
		lines = append(lines, purchase("e"+h, "2026-11-04T"+h+":30:00Z", "u", "1"))
	}
	dir := writeLog(t, map[string][]string{"p0": lines})
	// Each case applies its corrections, so each gets its own sink.
	newSink := func(t *testing.T) string {
		sink, path := openSink(t)
		if _, err := sink.Write(context.Background(), batch([]model.Row{
			row(t, "2026-11-04T13:00:00Z", "1", 1, 2, model.Final), // closes 10-12 too
			row(t, "2026-11-01T00:00:00Z", "9", 1, 2, model.Final), // not in the raw log
		}, nil)); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, from, to, date string
		checked              int
		diffs                []string
	}{
		{name: "default", checked: 4, diffs: []string{
			"2026-11-04T10:00:00Z {} unexplained 1.000000", // a lost row: its event was counted
			"2026-11-04T11:00:00Z {} unexplained 1.000000", // a lost row: its event was counted
			"2026-11-04T12:00:00Z {} unexplained 1.000000", // a lost row: its event was counted
		}},
		{name: "from-to", from: "2026-11-04T11:00:00Z", to: "2026-11-04T13:00:00Z", checked: 2, diffs: []string{
			"2026-11-04T11:00:00Z {} unexplained 1.000000", // a lost row: its event was counted
			"2026-11-04T12:00:00Z {} unexplained 1.000000", // a lost row: its event was counted
		}},
		{name: "offset", from: "2026-11-04T13:00:00+01:00", to: "2026-11-04T12:00:00Z", checked: 0},
		{name: "date-other-day", date: "2026-11-05", checked: 0},
		{name: "old-row", from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z", checked: 1, diffs: []string{
			"2026-11-01T00:00:00Z {} unexplained -9.000000",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(dir, newSink(t), "range-"+tc.name)
			r, err := reconcile.ParseRange(tc.from, tc.to, tc.date)
			if tc.name == "offset" {
				// 13:00+01:00 is 12:00Z: an empty range is refused.
				if err == nil {
					t.Fatalf("ParseRange(%s, %s) = %v, want an error", tc.from, tc.to, r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o.Range = r
			o.Apply = true
			out := run(t, o)
			if out.Checked != tc.checked || !slices.Equal(keysOf(out.Diffs), tc.diffs) {
				t.Errorf("checked %d, diffs %q; want %d, %q", out.Checked, keysOf(out.Diffs), tc.checked, tc.diffs)
			}
			// The 2026-11-01 row has no raw events at all: reported and
			// material, but not emptied by --apply.
			if tc.name == "old-row" && (out.Applied != 0 || len(out.Held()) != 1 || out.ExitCode() != reconcile.ExitUnexplained) {
				t.Errorf("old row: applied %d, held %d, exit %d; want 0, 1, 1", out.Applied, len(out.Held()), out.ExitCode())
			}
		})
	}
}

// A record the stream quarantined as future_event_time stays out, even when
// its time has passed by the time reconcile reads it: that verdict depends
// on the processing time of the stream's read.
func TestStreamFutureVerdictHonoured(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("F", "2026-11-04T10:45:00Z", "u2", "999"),
	}})
	sink, path := openSink(t)
	if _, err := sink.Write(context.Background(), batchQ(
		[]model.Row{row(t, "2026-11-04T10:00:00Z", "100", 1, 2, model.Final)},
		[]model.Quarantined{{Position: "p0/a.jsonl:2", Payload: []byte("{}"), Reason: model.ReasonFutureEventTime}},
	)); err != nil {
		t.Fatal(err)
	}
	out := run(t, options(dir, path, "future"))
	if out.ExitCode() != reconcile.ExitClean || out.Stats.StreamFuture != 1 || out.Stats.Quarantined[model.ReasonFutureEventTime] != 1 {
		t.Errorf("exit %d, stats %+v; want 0 with one stream future verdict", out.ExitCode(), out.Stats)
	}
}

// A restart re-reads the log from its resume points when processing time has
// caught up: the stream may count a record it first quarantined as
// future_event_time. A FINAL row larger by some of those records agrees with
// the log and is not corrected; a surplus they do not add up to pages.
func TestFutureCountedAfterARestartIsExplained(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("F", "2026-11-04T10:45:00Z", "u2", "999"),
		purchase("G", "2026-11-04T10:50:00Z", "u3", "7"),
		purchase("H", "2026-11-04T11:50:00Z", "u4", "5"), // future, never counted
	}})
	future := []model.Quarantined{{Position: "p0/a.jsonl:2", Payload: []byte("{}"), Reason: model.ReasonFutureEventTime},
		{Position: "p0/a.jsonl:3", Payload: []byte("{}"), Reason: model.ReasonFutureEventTime},
		{Position: "p0/a.jsonl:4", Payload: []byte("{}"), Reason: model.ReasonFutureEventTime}}
	for _, tc := range []struct {
		revenue string
		count   int64
		want    []string
		exit    int
		after   int64 // the 10:00 row's count after --apply
	}{
		{"1099", 2, nil, reconcile.ExitClean, 2}, // F counted, G not
		{"1106", 3, nil, reconcile.ExitClean, 3},
		{"1098", 2, []string{"2026-11-04T10:00:00Z {} unexplained -998.000000"}, reconcile.ExitUnexplained, 1},
	} {
		t.Run(tc.revenue, func(t *testing.T) {
			sink, path := openSink(t)
			if _, err := sink.Write(context.Background(), batchQ([]model.Row{
				row(t, "2026-11-04T10:00:00Z", tc.revenue, tc.count, 2, model.Final),
				row(t, "2026-11-04T12:00:00Z", "0", 0, 2, model.Final), // closes 11:00, whose H the stream never counted
			}, future)); err != nil {
				t.Fatal(err)
			}
			o := options(dir, path, "future")
			o.Apply = true
			out := run(t, o)
			if got := keysOf(out.Diffs); !slices.Equal(got, tc.want) || out.ExitCode() != tc.exit || out.Checked != 1 ||
				out.FutureCounted != 1-len(tc.want) {
				t.Errorf("diffs %q, exit %d, %d checked, %d future-counted; want %q, exit %d, 1 checked",
					got, out.ExitCode(), out.Checked, out.FutureCounted, tc.want, tc.exit)
			}
			if got := current(t, sink)[oracle.Key{WindowStart: rowtest.MS("2026-11-04T10:00:00Z"), Dims: "{}"}]; got.Count != tc.after {
				t.Errorf("after --apply the 10:00 row has %d events, want %d", got.Count, tc.after)
			}
		})
	}
}

// Reconcile refuses a sink whose rows were computed with other settings.
func TestRefusesOtherRunConfig(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {purchase("A", "2026-11-04T10:15:00Z", "u1", "1")}})
	for _, tc := range []struct {
		name   string
		change func(*reconcile.Options)
		want   string
	}{
		{"window", func(o *reconcile.Options) { o.Triggers.Window = 30 * time.Minute }, "window=1h0m0s"},
		{"dimensions", func(o *reconcile.Options) { o.Event.Dimensions = []string{"country"} }, "dimensions="},
		{"lateness", func(o *reconcile.Options) { o.Triggers.AllowedLateness = time.Hour }, "allowed_lateness=24h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, path := openSink(t)
			o := options(dir, path, "cfg")
			tc.change(&o)
			_, err := reconcile.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a run_config mismatch naming %s", err, tc.want)
			}
		})
	}
}

// Dims are canonical (sorted keys, SPEC §5): a sink the stream wrote with
// --dimensions=platform,country is reconciled with country,platform, whose
// keys are the same (TestRefusesOtherRunConfig keeps refusing another set).
func TestAcceptsDimensionsInAnyOrder(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {purchase("A", "2026-11-04T10:15:00Z", "u1", "1")}})
	_, path := openSink(t, "platform", "country")
	out, err := reconcile.Run(context.Background(), options(dir, path, "order", "country", "platform"))
	if err != nil {
		t.Fatalf("reconcile.Run: %v", err)
	}
	if out.ExitCode() != reconcile.ExitClean || out.OpenChecked != 1 {
		t.Errorf("exit %d, %d open windows checked; want 0 and 1", out.ExitCode(), out.OpenChecked)
	}
}

// Bad sources and sinks fail before any work, without creating files.
func TestRefusesBadSourceAndSink(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {purchase("A", "2026-11-04T10:15:00Z", "u1", "1")}})
	_, path := openSink(t)
	for _, tc := range []struct {
		name         string
		source, sink string
		want         string
	}{
		{"no source", filepath.Join(t.TempDir(), "nope"), path, "--source"},
		{"empty source", t.TempDir(), path, "no partitions"},
		{"no sink", dir, filepath.Join(t.TempDir(), "nope.db"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(tc.source, tc.sink, "bad")
			_, err := reconcile.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// SPEC §6: a sink row reconcile cannot read, in hourly_revenue (the horizon
// query included) or in the changelog a correction builds on, is one line
// naming the table, window and column, counts as unexplained (exit 1 even
// after --apply has written the explained 12:00 correction), and its key is
// neither compared nor corrected.
func TestUnreadableSinkRowsUnexplained(t *testing.T) {
	for _, tc := range []struct {
		name, corrupt, want string
	}{
		{"window_end", `UPDATE hourly_revenue SET window_end = 'garbage' WHERE window_start = '2026-11-04T11:00:00Z'`,
			`hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column window_end: bad time "garbage"`},
		{"event_count", `UPDATE hourly_revenue SET event_count = 'x' WHERE window_start = '2026-11-04T11:00:00Z'`,
			`hourly_revenue row window_start=2026-11-04T11:00:00Z dims={}: column event_count: not an integer: "x"`},
		{"changelog revenue", `UPDATE hourly_revenue_changelog SET revenue = 'zz' WHERE window_start = '2026-11-04T11:00:00Z' AND revision = 1`,
			`hourly_revenue_changelog row window_start=2026-11-04T11:00:00Z dims={}: column revenue: bad amount "zz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeLog(t, map[string][]string{"p0": {
				purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
				purchase("B", "2026-11-04T11:15:00Z", "u2", "5"),
				purchase("C", "2026-11-04T12:15:00Z", "u3", "3"),
				purchase("D", "2026-11-04T12:20:00Z", "u4", "2"),
			}})
			s, path := openSink(t)
			b := batch([]model.Row{
				row(t, "2026-11-04T10:00:00Z", "100", 1, 2, model.Final),
				row(t, "2026-11-04T11:00:00Z", "5", 1, 1, model.OnTime),
				row(t, "2026-11-04T11:00:00Z", "5", 1, 2, model.Final),
				row(t, "2026-11-04T12:00:00Z", "3", 1, 2, model.Final), // D was too late: explained
			}, nil)
			b.TooLate = []model.TooLate{{Position: "p0/a.jsonl:4", EventID: "D", EventTime: rowtest.MS("2026-11-04T12:20:00Z"),
				Payload: []byte(purchase("D", "2026-11-04T12:20:00Z", "u4", "2")), Reason: model.ReasonWindowClosed}}
			if _, err := s.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(tc.corrupt)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}

			o := options(dir, path, "fix")
			o.Apply = true
			out := run(t, o)
			if out.ExitCode() != reconcile.ExitUnexplained {
				t.Errorf("exit %d, want %d", out.ExitCode(), reconcile.ExitUnexplained)
			}
			var lines []string
			for _, u := range out.Unreadable {
				lines = append(lines, u.String())
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("unreadable rows:\n%s\nwant one line starting %s", strings.Join(lines, "\n"), tc.want)
			}
			if out.Counters[reconcile.MetricRowsUnreadable] != 1 {
				t.Errorf("%s = %d, want 1", reconcile.MetricRowsUnreadable, out.Counters[reconcile.MetricRowsUnreadable])
			}
			if got, want := keysOf(out.Diffs), []string{"2026-11-04T12:00:00Z {} too_late 2.000000"}; !slices.Equal(got, want) {
				t.Errorf("diffs %v, want %v (11:00 not compared)", got, want)
			}
			if out.Applied != 1 {
				t.Errorf("applied %d corrections, want 1 (12:00 only)", out.Applied)
			}
		})
	}
}

// A correction already applied explains itself (SPEC §6): too-late events
// that arrive after a window was corrected are explained against the
// stream's own FINAL row (too_late), or against no stream row for a window
// the stream never opened (missing_window), not against the correction, which
// already holds the earlier too-late events; or against the correction when
// it held none (11:00, whose stream row was wrong). A daily reconcile
// re-checking a corrected window must not page.
func TestTooLateAfterACorrectionIsExplained(t *testing.T) {
	c := purchase("C", "2026-11-04T10:50:00Z", "u3", "20")
	m := purchase("M", "2026-11-04T12:15:00Z", "u5", "3")
	dir := writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T13:15:00Z", "u2", "1"),
		c, // too late for 10:00
		m, // too late: 12:00 never opened
		purchase("E", "2026-11-04T11:15:00Z", "u7", "5"), // the stream counted it twice
	}})
	s, path := openSink(t)
	b := batch([]model.Row{
		row(t, "2026-11-04T10:00:00Z", "100", 1, 2, model.Final),
		row(t, "2026-11-04T11:00:00Z", "10", 2, 2, model.Final),
		row(t, "2026-11-04T13:00:00Z", "1", 1, 2, model.Final),
	}, nil)
	tooLate := func(pos, id, at, line string) model.TooLate {
		return model.TooLate{Position: pos, EventID: id, EventTime: rowtest.MS(at), Payload: []byte(line), Reason: model.ReasonWindowClosed}
	}
	b.TooLate = []model.TooLate{
		tooLate("p0/a.jsonl:3", "C", "2026-11-04T10:50:00Z", c),
		tooLate("p0/a.jsonl:4", "M", "2026-11-04T12:15:00Z", m),
	}
	ctx := context.Background()
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	o := options(dir, path, "first")
	o.Apply = true
	if first := run(t, o); first.ExitCode() != reconcile.ExitUnexplained || first.Applied != 3 {
		t.Fatalf("first run: exit %d, %d applied, diffs %v; want 1, 3", first.ExitCode(), first.Applied, keysOf(first.Diffs))
	}

	// More too-late events for the three corrected windows arrive in a later file.
	d := purchase("D", "2026-11-04T10:55:00Z", "u4", "5")
	n := purchase("N", "2026-11-04T12:20:00Z", "u6", "2")
	f := purchase("F", "2026-11-04T11:20:00Z", "u8", "4")
	if err := os.WriteFile(filepath.Join(dir, "p0", "b.jsonl"), []byte(d+"\n"+n+"\n"+f+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, sink.Batch{Audit: sink.Audit{TooLate: []model.TooLate{
		tooLate("p0/b.jsonl:1", "D", "2026-11-04T10:55:00Z", d),
		tooLate("p0/b.jsonl:2", "N", "2026-11-04T12:20:00Z", n),
		tooLate("p0/b.jsonl:3", "F", "2026-11-04T11:20:00Z", f),
	}}}); err != nil {
		t.Fatal(err)
	}

	second := run(t, options(dir, path, "second"))
	if got := second.ExitCode(); got != reconcile.ExitPending {
		t.Errorf("second run: exit %d, want %d (explained, pending)", got, reconcile.ExitPending)
	}
	want := []string{"2026-11-04T10:00:00Z {} too_late 5.000000", "2026-11-04T11:00:00Z {} too_late 4.000000",
		"2026-11-04T12:00:00Z {} missing_window 2.000000"}
	if got := keysOf(second.Diffs); !slices.Equal(got, want) {
		t.Errorf("second run: diffs %v, want %v", got, want)
	}

	o.RunID = "third"
	if third := run(t, o); third.ExitCode() != reconcile.ExitClean || third.Applied != 3 {
		t.Errorf("third run (--apply): exit %d, %d applied; want 0, 3", third.ExitCode(), third.Applied)
	}
	got := current(t, s)
	if v := got[oracle.Key{WindowStart: rowtest.MS("2026-11-04T10:00:00Z"), Dims: "{}"}]; v.Count != 3 || v.RevenueMicros != 125_000_000 {
		t.Errorf("10:00 after the corrections: %s, want 125.000000 (3 events)", v)
	}
	if v := got[oracle.Key{WindowStart: rowtest.MS("2026-11-04T11:00:00Z"), Dims: "{}"}]; v.Count != 2 || v.RevenueMicros != 9_000_000 {
		t.Errorf("11:00 after the corrections: %s, want 9.000000 (2 events)", v)
	}
	if v := got[oracle.Key{WindowStart: rowtest.MS("2026-11-04T12:00:00Z"), Dims: "{}"}]; v.Count != 2 || v.RevenueMicros != 5_000_000 {
		t.Errorf("12:00 after the corrections: %s, want 5.000000 (2 events)", v)
	}
}
