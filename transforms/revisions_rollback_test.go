package transforms

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/bigquery"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
	"github.com/revenue-stream/hourly/triggers"
)

// memState is the revision step's value state, in memory, so that a test can
// snapshot it and restore the step from the snapshot as a runner restores a
// checkpoint. (The step uses value state only.)
type memState struct {
	state.Provider
	values map[string]any
}

func (m *memState) ReadValueState(id string) (any, []state.Transaction, error) {
	return m.values[id], nil, nil
}

func (m *memState) WriteValueState(t state.Transaction) error {
	m.values[t.Key] = t.Val
	return nil
}

func (m *memState) ClearValueState(t state.Transaction) error {
	delete(m.values, t.Key)
	return nil
}

// snapshot copies the state; the step writes a new []byte each time.
func (m *memState) snapshot() *memState { return &memState{values: maps.Clone(m.values)} }

type noTimers struct{}

func (noTimers) Set(timers.TimerMap) {}

// rowSink is what the rollback test needs of a sink.
type rowSink interface {
	sink.Reader
}

// stepRun drives one instance of the revision step over one key, as a
// worker would: deltas and firings in order, each bundle's rows written to
// the sink.
type stepRun struct {
	t    *testing.T
	f    *revisionsFn
	sp   *memState
	sink rowSink
	key  string
	// accepted and stale count what the sink did with the rows.
	accepted, stale int
}

func startStep(t *testing.T, spec sink.Spec, sink rowSink, sp *memState, key string) *stepRun {
	t.Helper()
	f := &revisionsFn{Policy: rollbackPolicy, Published: spec, State: state.MakeValueState[[]byte]("window"), Firing: timers.InEventTime("firing")}
	if err := f.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &stepRun{t: t, f: f, sp: sp, sink: sink, key: key}
}

var rollbackPolicy = triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour}

func (r *stepRun) write(rows []model.Row) {
	r.t.Helper()
	if len(rows) == 0 {
		return
	}
	res, err := r.sink.Write(context.Background(), sink.Batch{Rows: rows})
	if err != nil {
		r.t.Fatal(err)
	}
	r.accepted += res.Accepted
	r.stale += res.Stale
}

// add hands the step one delta (a bundle's events of the key).
func (r *stepRun) add(micros, n int64, afterEnd bool) *stepRun {
	r.t.Helper()
	var rows []model.Row
	d := model.Delta{RevenueMicros: micros, Count: n, AfterEnd: afterEnd}
	if err := r.f.ProcessElement(context.Background(), r.sp, noTimers{}, r.key, d, func(row model.Row) { rows = append(rows, row) }); err != nil {
		r.t.Fatal(err)
	}
	r.write(rows)
	return r
}

// fire fires one of the step's timers (tagOnTime, tagFinal).
func (r *stepRun) fire(tag string) *stepRun {
	r.t.Helper()
	var rows []model.Row
	if err := r.f.OnTimer(context.Background(), r.sp, noTimers{}, r.key, timers.Context{Tag: tag, Family: "firing"}, func(row model.Row) { rows = append(rows, row) }); err != nil {
		r.t.Fatal(err)
	}
	r.write(rows)
	return r
}

// TestRestoredStateContinuesAfterTheSinkRows rolls the revision step back
// to an older snapshot of its state while the sink keeps the rows written
// since, as a Flink failover does: the restored job re-reads the records
// after the checkpoint, bundled differently. The sink's current row must
// converge to the restored job's FINAL, with no dip, every changelog row a
// complete snapshot, and no revision reissued with other content.
//
// Without adopting the sink's newer rows (WindowState.Adopt from the seed
// every Setup reads) the restored job reissues revisions 2 (LATE 200) and
// 3 (FINAL): the sink refuses both as stale, so the window's current row
// stays LATE forever.
func TestRestoredStateContinuesAfterTheSinkRows(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "revenue.db")
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testRollback(t, sink.Spec{Scheme: sink.SchemeSQLite, Path: path}, db)
	})
	t.Run("bigquery", func(t *testing.T) {
		bqtest.Start(t)
		spec := sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "rollback"}
		db, err := bigquery.Open(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testRollback(t, spec, db)
	})
}

func testRollback(t *testing.T, spec sink.Spec, sink rowSink) {
	start := at("2026-11-04T10:00:00Z")
	key := WindowKey(start, "{}")

	// The first timeline: A+B on time, ON_TIME; the checkpoint; then C and
	// E late in two bundles. Its rows reach the sink; the job then fails.
	first := startStep(t, spec, sink, &memState{values: map[string]any{}}, key)
	first.add(150e6, 2, false).fire(tagOnTime)
	checkpoint := first.sp.snapshot()
	first.add(20e6, 1, true).add(30e6, 1, true)

	// The restored job: the state of the checkpoint (ON_TIME published),
	// a new instance whose Setup reads the sink, and C and E re-read in one
	// bundle this time.
	restored := startStep(t, spec, sink, checkpoint, key)
	restored.add(50e6, 2, true).fire(tagFinal)
	if restored.stale != 0 {
		t.Errorf("the restored job's rows: %d refused as stale; want none reissued", restored.stale)
	}

	ctx := context.Background()
	current, err := sinktest.CurrentRows(ctx, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(current) != 1 || current[0].State != model.Final || current[0].Revision != 4 || current[0].RevenueMicros != 200e6 || current[0].EventCount != 4 {
		t.Fatalf("current rows %+v, want FINAL 200.000000 of 4 events at revision 4", current)
	}
	changelog, err := sinktest.ChangelogRows(ctx, sink)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range changelog {
		got = append(got, r.State.String()+" "+model.FormatMicros(r.RevenueMicros))
	}
	if want := "ON_TIME 150.000000, LATE 170.000000, LATE 200.000000, FINAL 200.000000"; strings.Join(got, ", ") != want {
		t.Errorf("changelog: %s\nwant %s", strings.Join(got, ", "), want)
	}

	// A second rollback to the same checkpoint, C and E in two bundles
	// again: C alone (170.000000 of 3) would dip under the sink's LATE
	// 200.000000 of 4, and the window is FINAL there: nothing is written.
	again := startStep(t, spec, sink, checkpoint.snapshot(), key)
	again.add(20e6, 1, true).add(30e6, 1, true).fire(tagFinal)
	if again.accepted != 0 || again.stale != 0 {
		t.Errorf("a second restore wrote %d rows and had %d refused; want none", again.accepted, again.stale)
	}
}

// tick hands the step an EARLY tick.
func (r *stepRun) tick() *stepRun {
	r.t.Helper()
	var rows []model.Row
	if err := r.f.ProcessElement(context.Background(), r.sp, noTimers{}, r.key, model.Delta{Tick: true}, func(row model.Row) { rows = append(rows, row) }); err != nil {
		r.t.Fatal(err)
	}
	r.write(rows)
	return r
}

// TestRestoredOnTimeAfterTheSinksEarlyRow: the sink holds an EARLY row the
// step's state has not published, and the data behind it comes back after
// the window's ON_TIME moment. B is a record of a partition hours ahead,
// late in its partition but on time for the pipeline, so its timestamp does
// not hold the watermark before window_end: the first timeline counted it
// before the end (EARLY 150 of 2), the second fires ON_TIME before it
// re-reads B (late by then). Two ways to the second timeline: a restore
// from a checkpoint taken after A, and a restart with no state (prism: a
// new run seeded from the sink, which re-reads A first). The window must
// get its ON_TIME row when the watermark passes its end (the sink's
// snapshot: no dip), nothing when B catches up, then LATE and FINAL.
//
// Before, the second ON_TIME was silent (100 of 1 would dip under 150 of
// 2) and B then made the same snapshot, a silent LATE relabel: the current
// row stayed EARLY for the whole allowed lateness and the changelog never
// had an ON_TIME row.
func TestRestoredOnTimeAfterTheSinksEarlyRow(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "restore", true: "restart"}[restart], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "revenue.db")
			db, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			spec := sink.Spec{Scheme: sink.SchemeSQLite, Path: path}
			key := WindowKey(at("2026-11-04T10:00:00Z"), "{}")

			first := startStep(t, spec, db, &memState{values: map[string]any{}}, key)
			first.add(100e6, 1, false).tick()
			checkpoint := first.sp.snapshot()
			first.add(50e6, 1, false).tick()

			var second *stepRun
			if restart {
				second = startStep(t, spec, db, &memState{values: map[string]any{}}, key)
				second.add(100e6, 1, false)
			} else {
				second = startStep(t, spec, db, checkpoint, key)
			}
			second.fire(tagOnTime).add(50e6, 1, true)
			ctx := context.Background()
			current, err := sinktest.CurrentRows(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if len(current) != 1 || current[0].State != model.OnTime || current[0].Revision != 3 || current[0].RevenueMicros != 150e6 || current[0].EventCount != 2 {
				t.Fatalf("current rows after the ON_TIME moment %+v, want ON_TIME 150.000000 of 2 events at revision 3", current)
			}
			second.add(20e6, 1, true).fire(tagFinal)
			if second.stale != 0 {
				t.Errorf("the second timeline's rows: %d refused as stale; want none reissued", second.stale)
			}
			changelog, err := sinktest.ChangelogRows(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range changelog {
				got = append(got, r.State.String()+" "+model.FormatMicros(r.RevenueMicros))
			}
			if want := "EARLY 100.000000, EARLY 150.000000, ON_TIME 150.000000, LATE 170.000000, FINAL 170.000000"; strings.Join(got, ", ") != want {
				t.Errorf("changelog: %s\nwant %s", strings.Join(got, ", "), want)
			}
		})
	}
}
