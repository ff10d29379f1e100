package reconcile_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

// applyScenario is a raw log whose 10:00 and 11:00 FINAL rows (revision 2) are each short by one
// too-late event: two explained corrections, revision 3 each.
func applyScenario(t *testing.T) (dir, path string, s *sqlite.SQLite) {
	t.Helper()
	late := []string{purchase("B", "2026-11-04T10:30:00Z", "u2", "5"), purchase("D", "2026-11-04T11:40:00Z", "u4", "2")}
	dir = writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"), late[0],
		purchase("C", "2026-11-04T11:15:00Z", "u3", "7"), late[1],
	}})
	s, path = openSink(t)
	b := batch([]model.Row{row(t, "2026-11-04T10:00:00Z", "100", 1, 2, model.Final), row(t, "2026-11-04T11:00:00Z", "7", 1, 2, model.Final)}, nil)
	for i, at := range []string{"2026-11-04T10:30:00Z", "2026-11-04T11:40:00Z"} {
		b.TooLate = append(b.TooLate, model.TooLate{Position: fmt.Sprintf("p0/a.jsonl:%d", 2*i+2), EventID: string(rune('B' + 2*i)),
			EventTime: rowtest.MS(at), Payload: []byte(late[i]), Reason: model.ReasonWindowClosed})
	}
	if _, err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return dir, path, s
}

// appliedOf is a run's reconcile_diffs as "window_start applied_revision" (0: NULL).
func appliedOf(t *testing.T, s *sqlite.SQLite, runID string) []string {
	return slicesx.Map(diffsOf(t, s, runID), func(d sink.Diff) string {
		var rev int64
		if d.AppliedRevision != nil {
			rev = *d.AppliedRevision
		}
		return fmt.Sprintf("%s %d", model.FormatTime(d.WindowStart), rev)
	})
}

// corrections is the changelog's reconcile rows as "window_start revision writer".
func corrections(t *testing.T, s *sqlite.SQLite) []string {
	return slicesx.Map(slices.DeleteFunc(changelog(t, s), func(r model.Row) bool { return !r.ByReconcile() }), func(r model.Row) string {
		return fmt.Sprintf("%s %d %s", model.FormatTime(r.WindowStart), r.Revision, r.Writer)
	})
}

// The stream writes the 11:00 key (its revision 3) while an --apply run is between its comparison
// and its corrections: the sink accepts 10:00's correction and refuses 11:00's. The run records
// applied_revision 3 for the one that landed, leaves 11:00 pending (exit 3, as for any explained
// correction not yet written), and the next --apply writes only 11:00, one revision above the
// stream's.
func TestPartlyAcceptedApplyIsRecorded(t *testing.T) {
	dir, path, s := applyScenario(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The diffs are written just before the corrections: the stream's write lands then.
	if _, err := db.Exec(`CREATE TRIGGER stream_meanwhile AFTER INSERT ON reconcile_diffs
		WHEN NEW.run_id = 'partial' AND NEW.window_start = '2026-11-04T11:00:00Z' BEGIN
		INSERT OR IGNORE INTO hourly_revenue_changelog (window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, written_at, writer)
			SELECT window_start, window_end, dims, revenue, revenue_micros, event_count, 3, result_state, written_at, 'stream'
			FROM hourly_revenue_changelog WHERE window_start = NEW.window_start AND revision = 2;
		UPDATE hourly_revenue SET revision = 3 WHERE window_start = NEW.window_start AND revision = 2;
		END`); err != nil {
		t.Fatal(err)
	}
	o := options(dir, path, "partial")
	o.Apply = true
	out, err := reconcile.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("reconcile.Run: %v", err)
	}
	if out.ExitCode() != reconcile.ExitPending || out.Applied != 1 {
		t.Errorf("partial: exit %d, %d applied; want %d, 1", out.ExitCode(), out.Applied, reconcile.ExitPending)
	}
	if got, want := appliedOf(t, s, "partial"), []string{"2026-11-04T10:00:00Z 3", "2026-11-04T11:00:00Z 0"}; !slices.Equal(got, want) {
		t.Errorf("partial: applied_revision %v, want %v", got, want)
	}

	o.RunID = "again"
	again := run(t, o)
	if again.ExitCode() != reconcile.ExitClean || again.Applied != 1 {
		t.Errorf("again: exit %d, %d applied, diffs %v; want 0, 1", again.ExitCode(), again.Applied, keysOf(again.Diffs))
	}
	if got, want := appliedOf(t, s, "again"), []string{"2026-11-04T11:00:00Z 4"}; !slices.Equal(got, want) {
		t.Errorf("again: applied_revision %v, want %v", got, want)
	}
	if got, want := corrections(t, s), []string{"2026-11-04T10:00:00Z 3 reconcile:partial", "2026-11-04T11:00:00Z 4 reconcile:again"}; !slices.Equal(got, want) {
		t.Errorf("corrections %v, want %v", got, want)
	}
}

// A run interrupted after its corrections were written and before its diffs were written again
// left applied_revision NULL for corrections that are in the table: the next run, or its retry under
// the same --run-id, finds nothing to correct, completes those rows from the changelog and writes
// nothing else.
func TestInterruptedApplyIsCompletedByTheNextRun(t *testing.T) {
	for _, next := range []string{"next", "cut"} {
		t.Run(next, func(t *testing.T) {
			dir, path, s := applyScenario(t)
			cut := run(t, options(dir, path, "cut")) // its diffs, applied_revision NULL
			if _, err := s.Write(context.Background(), sink.Batch{Rows: reconcile.Corrections(cut.Diffs, cut.Options.Triggers, "cut")}); err != nil {
				t.Fatal(err) // its corrections: then the run stopped
			}
			before := len(changelog(t, s))
			o := options(dir, path, next)
			o.Apply = true
			if out := run(t, o); out.ExitCode() != reconcile.ExitClean || out.Applied != 0 || len(out.Diffs) != 0 {
				t.Errorf("%s: exit %d, %d applied, diffs %v; want 0, 0, none", next, out.ExitCode(), out.Applied, keysOf(out.Diffs))
			}
			if got, want := appliedOf(t, s, "cut"), []string{"2026-11-04T10:00:00Z 3", "2026-11-04T11:00:00Z 3"}; !slices.Equal(got, want) {
				t.Errorf("cut: applied_revision %v, want %v", got, want)
			}
			if n := len(changelog(t, s)); n != before {
				t.Errorf("%s wrote %d changelog rows, want none", next, n-before)
			}
		})
	}
}

// A restored stream worker seeded its revision (2) before a correction lowered 11:00's count (3,
// the stream had counted E twice), then wrote its own FINAL (4) with the stream's count: the sink
// takes it, a higher revision whose count does not fall (docs/restart.md). The next run finds the
// same excess again against the stream's row: unexplained, as the first time (exit 1: the
// correction was undone), and --apply corrects it once more, above the stream's revision.
func TestCorrectionUndoneByARestoredWorkerIsFoundAgain(t *testing.T) {
	dir := writeLog(t, map[string][]string{"p0": {purchase("E", "2026-11-04T11:15:00Z", "u7", "5")}})
	s, path := openSink(t)
	fix := row(t, "2026-11-04T11:00:00Z", "5", 1, 3, model.Final)
	fix.Writer = reconcile.Writer("fix")
	if _, err := s.Write(context.Background(), batch([]model.Row{row(t, "2026-11-04T11:00:00Z", "10", 2, 2, model.Final), fix,
		row(t, "2026-11-04T11:00:00Z", "10", 2, 4, model.Final)}, nil)); err != nil {
		t.Fatal(err)
	}
	o := options(dir, path, "after")
	o.Apply = true
	out := run(t, o)
	if got, want := keysOf(out.Diffs), []string{"2026-11-04T11:00:00Z {} unexplained -5.000000"}; out.ExitCode() != reconcile.ExitUnexplained || !slices.Equal(got, want) {
		t.Errorf("after: exit %d, diffs %v; want %d, %v", out.ExitCode(), got, reconcile.ExitUnexplained, want)
	}
	if got, want := appliedOf(t, s, "after"), []string{"2026-11-04T11:00:00Z 5"}; !slices.Equal(got, want) {
		t.Errorf("after: applied_revision %v, want %v", got, want)
	}
	if again := run(t, options(dir, path, "again")); again.ExitCode() != reconcile.ExitClean {
		t.Errorf("again: exit %d, diffs %v; want 0", again.ExitCode(), keysOf(again.Diffs))
	}
}
