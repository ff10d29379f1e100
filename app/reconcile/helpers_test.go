package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func TestMain(m *testing.M) {
	// ptest parses the Beam flags (--runner; prism by default) and runs
	// beam.Init, which reconcile.Run's pipeline needs as any Beam program.
	os.Exit(ptest.MainRet(m))
}

// readAt is the processing time of both the "stream" (the oracle) and the
// reconcile runs: later than every generated event time, so future checks
// agree.
var readAt = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

var purchase = rowtest.Purchase

// launcherConfig is the run_config cmd/launch stores for the default
// settings (1h windows, 24h lateness) and the given dimensions.
func launcherConfig(dims ...string) map[string]string {
	return map[string]string{"window": "1h0m0s", "dimensions": strings.Join(dims, ","), "allowed_lateness": "24h0m0s"}
}

// openSink creates a SQLite sink with the launcher's run_config.
func openSink(t testing.TB, dims ...string) (*sqlite.SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "revenue.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CheckRunConfig(context.Background(), launcherConfig(dims...)); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// streamed builds the rows a bounded replay of the stream leaves: per key an
// ON_TIME row and a FINAL row, written by "stream".
func streamed(final map[oracle.Key]oracle.Total, window time.Duration) []model.Row {
	var rows []model.Row
	for k, v := range final {
		r := model.Row{WindowStart: k.WindowStart, WindowEnd: k.WindowStart + window.Milliseconds(), Dims: k.Dims,
			RevenueMicros: v.RevenueMicros, EventCount: v.Count, Writer: "stream"}
		r.Revision, r.State = 1, model.OnTime
		rows = append(rows, r)
		r.Revision, r.State = 2, model.Final
		rows = append(rows, r)
	}
	return rows
}

// writeStream writes what the stream would have written for res: its FINAL
// rows (optionally tampered with) and its audit rows.
func writeStream(t testing.TB, s *sqlite.SQLite, res oracle.Result, rows []model.Row) {
	t.Helper()
	_, err := s.Write(context.Background(), sink.Batch{
		Rows: rows, Audit: sink.Audit{TooLate: res.TooLate, Conflicts: res.Conflicts, Quarantined: res.Quarantined},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// options returns reconcile options for a log and a sink.
func options(dir, sinkPath, runID string, dims ...string) reconcile.Options {
	o := reconcile.Defaults()
	o.Source = dir
	o.Sink = sink.Spec{Scheme: sink.SchemeSQLite, Path: sinkPath}
	o.RunID = runID
	o.Now = readAt
	o.Event.Dimensions = dims
	o.Event.MaxLine = 4096
	o.Shards = 8
	return o
}

func run(t testing.TB, o reconcile.Options) reconcile.Outcome {
	t.Helper()
	out, err := reconcile.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("reconcile.Run: %v", err)
	}
	var b strings.Builder
	reconcile.WriteSummary(&b, out)
	t.Logf("summary:\n%s", b.String())
	return out
}

// current returns the sink's current rows as oracle totals, checking that
// every one is FINAL.
func current(t testing.TB, s *sqlite.SQLite) map[oracle.Key]oracle.Total {
	t.Helper()
	rows, err := sinktest.CurrentRows(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[oracle.Key]oracle.Total{}
	for _, r := range rows {
		if r.State != model.Final {
			t.Errorf("row %s is %v, want FINAL", r.Key(), r.State)
		}
		out[oracle.Key{WindowStart: r.WindowStart, Dims: r.Dims}] = oracle.Total{RevenueMicros: r.RevenueMicros, Count: r.EventCount}
	}
	return out
}

func changelog(t testing.TB, s *sqlite.SQLite) []model.Row {
	t.Helper()
	rows, err := sinktest.ChangelogRows(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func diffsOf(t testing.TB, s *sqlite.SQLite, runID string) []sink.Diff {
	t.Helper()
	all, err := s.Diffs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []sink.Diff
	for _, d := range all {
		if d.RunID == runID {
			out = append(out, d)
		}
	}
	return out
}

// writeLog writes a hand-made raw log: partition -> lines, one file each.
func writeLog(t testing.TB, parts map[string][]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	for p, lines := range parts {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, p, "a.jsonl"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fingerprint parses a line as the stream does and returns its fingerprint.
func fingerprint(t testing.TB, line string) uint64 {
	t.Helper()
	ev, q := event.Parse(model.Record{Line: []byte(line), ReadAt: readAt.UnixMilli(), WatermarkBefore: model.NoWatermark}, event.DefaultConfig())
	if q != nil {
		t.Fatalf("%s: %s", line, q.Detail)
	}
	return ev.Fingerprint
}

// row is a streamed row of a one-hour window without dims.
func row(t testing.TB, start, revenue string, count, rev int64, st model.ResultState) model.Row {
	t.Helper()
	s := rowtest.MS(start)
	m, err := event.ParseAmount([]byte(revenue))
	if err != nil {
		t.Fatal(err)
	}
	return model.Row{WindowStart: s, WindowEnd: s + time.Hour.Milliseconds(), Dims: "{}", RevenueMicros: m,
		EventCount: count, Revision: rev, State: st, Writer: "stream"}
}

func keysOf(diffs []reconcile.Diff) []string {
	var out []string
	for _, d := range diffs {
		out = append(out, fmt.Sprintf("%s %s %s", d.Key, d.Classification, model.FormatMicros(d.DeltaMicros())))
	}
	slices.Sort(out)
	return out
}

func batch(rows []model.Row, conflicts []model.Conflict) sink.Batch {
	return sink.Batch{Rows: rows, Audit: sink.Audit{Conflicts: conflicts}}
}

func batchQ(rows []model.Row, q []model.Quarantined) sink.Batch {
	return sink.Batch{Rows: rows, Audit: sink.Audit{Quarantined: q}}
}

// toleranceScenario is a raw log of four hourly events and a sink whose
// 10:00 row is short by 0.01 (rounding noise) and which has no 12:00 row:
// the stream judged its one event too late.
func toleranceScenario(t *testing.T) (dir, path string) {
	t.Helper()
	dir = writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T11:15:00Z", "u2", "5"),
		purchase("C", "2026-11-04T12:15:00Z", "u3", "3"),
		purchase("D", "2026-11-04T13:15:00Z", "u4", "1"),
	}})
	sink, path := openSink(t)
	b := batch([]model.Row{
		row(t, "2026-11-04T10:00:00Z", "99.99", 1, 2, model.Final), // rounding noise
		row(t, "2026-11-04T11:00:00Z", "5", 1, 2, model.Final),
		row(t, "2026-11-04T13:00:00Z", "1", 1, 2, model.Final), // 12:00: never opened
	}, nil)
	b.TooLate = []model.TooLate{{Position: "p0/a.jsonl:3", EventID: "C", EventTime: rowtest.MS("2026-11-04T12:15:00Z"),
		Payload: []byte(purchase("C", "2026-11-04T12:15:00Z", "u3", "3")), Reason: model.ReasonWindowClosed}}
	if _, err := sink.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// openScenario is a raw log of three hourly events and a sink where 10:00
// agrees, 11:00 is LATE and short (the stream is still on it) and 12:00 has
// no row and is not closed.
func openScenario(t *testing.T) (dir, path string, sink *sqlite.SQLite) {
	t.Helper()
	dir = writeLog(t, map[string][]string{"p0": {
		purchase("A", "2026-11-04T10:15:00Z", "u1", "100"),
		purchase("B", "2026-11-04T11:15:00Z", "u2", "5"),
		purchase("C", "2026-11-04T12:15:00Z", "u3", "1"),
	}})
	sink, path = openSink(t)
	if _, err := sink.Write(context.Background(), batch([]model.Row{
		row(t, "2026-11-04T10:00:00Z", "100", 1, 2, model.Final),
		row(t, "2026-11-04T11:00:00Z", "4", 1, 1, model.Late),
	}, nil)); err != nil {
		t.Fatal(err)
	}
	return dir, path, sink
}
