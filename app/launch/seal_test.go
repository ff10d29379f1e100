package launch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// fakeProgress is a ProgressStore in memory: the checkpoints of one run,
// a FINAL horizon, no open window, and the sealed points.
type fakeProgress struct {
	sink.ProgressStore // methods the sealer does not call panic
	checkpoints        []model.Checkpoint
	finalEnd           int64
	sealed             []model.Checkpoint
	seals              int
}

func (f *fakeProgress) RunCheckpoints(_ context.Context, run string) ([]model.Checkpoint, error) {
	return slices.Clone(f.checkpoints), nil
}
func (f *fakeProgress) FinalHorizon(context.Context) (int64, bool, error) {
	return f.finalEnd, true, nil
}
func (f *fakeProgress) EarliestOpenWindow(context.Context) (int64, bool, error) {
	return 0, false, nil
}
func (f *fakeProgress) ResumePoints(context.Context) ([]model.Checkpoint, error) {
	return slices.Clone(f.sealed), nil
}
func (f *fakeProgress) SealResume(_ context.Context, points []model.Checkpoint) error {
	f.sealed, f.seals = slices.Clone(points), f.seals+1
	return nil
}
func (f *fakeProgress) PruneCheckpoints(context.Context, string) error { return nil }
func (f *fakeProgress) Close() error                                   { return nil }

// TestSealerSealsOnlyWhatWasReadBeforeTheQuiet walks the sealer through a
// following run: the candidate read at t0 is sealed only once every record
// is judged and the sink's write counters stood still for the quiet period
// after it; a checkpoint written after the candidate waits for the next one.
func TestSealerSealsOnlyWhatWasReadBeforeTheQuiet(t *testing.T) {
	h := time.Hour.Milliseconds()
	po := pipeline.Defaults() // horizon = FINAL end + 24h - 25h - 10m
	cp := func(f string, maxValid int64) model.Checkpoint {
		return model.Checkpoint{Partition: "p0", File: f, MaxValid: maxValid, Run: "r"}
	}
	store := &fakeProgress{checkpoints: []model.Checkpoint{cp("a", 10*h), cp("b", 20*h), cp("c", 40*h)}, finalEnd: 30 * h}
	s := &sealer{store: store, run: "r", po: po, quiet: 2 * time.Second, every: 10 * time.Second}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	judged := func(read, written int64) reading {
		return reading{Counts: metrics.Counts{Read: read, Counted: read, SinkAccepted: written}, committed: true}
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	s.observe(context.Background(), at(0), judged(100, 5)) // reads the candidate: b (20h < 28h50m)
	// The sink then gets a later FINAL row and a new checkpoint: not part
	// of this candidate.
	store.finalEnd, store.checkpoints = 50*h, append(store.checkpoints, cp("d", 45*h))
	steps := []struct {
		at        time.Duration
		c         reading
		wantSeals int
	}{
		{time.Second, judged(100, 5), 0},             // quiet for 1s only
		{1500 * time.Millisecond, judged(100, 6), 0}, // a write: the wait starts again
		{3 * time.Second, judged(100, 6), 0},         // 1.5s after it
		{3600 * time.Millisecond, reading{Counts: metrics.Counts{Read: 101, Counted: 100, SinkAccepted: 6}, committed: true}, 0}, // a record in flight
		{4 * time.Second, judged(101, 6), 1}, // judged, quiet since 1.5s
	}
	for _, st := range steps {
		s.observe(context.Background(), at(st.at), st.c)
		if store.seals != st.wantSeals {
			t.Fatalf("at +%v: %d seals, want %d", st.at, store.seals, st.wantSeals)
		}
	}
	if want := []model.Checkpoint{cp("b", 20*h)}; !slices.Equal(store.sealed, want) {
		t.Errorf("sealed %+v, want the candidate read before the quiet %+v (not c or d, read later)", store.sealed, want)
	}
	// The next candidate, every 10s, takes d (45h < 48h50m) and seals it
	// after its own quiet period.
	s.observe(context.Background(), at(10*time.Second), judged(101, 6))
	s.observe(context.Background(), at(12*time.Second), judged(101, 6))
	if want := []model.Checkpoint{cp("d", 45*h)}; store.seals != 2 || !slices.Equal(store.sealed, want) {
		t.Errorf("second seal: %d seals, sealed %+v; want 2, %+v", store.seals, store.sealed, want)
	}
	// At the end of a run that did not settle nothing is sealed.
	store.checkpoints = append(store.checkpoints, cp("e", 46*h))
	if err := s.final(context.Background(), "the stop did not settle"); err != nil || store.seals != 2 {
		t.Errorf("final(unsettled): err %v, %d seals; want none", err, store.seals)
	}
	if err := s.final(context.Background(), ""); err != nil || store.seals != 3 || store.sealed[0].File != "e" {
		t.Errorf("final(settled): err %v, %d seals, sealed %+v; want e sealed", err, store.seals, store.sealed)
	}
}

// TestSinkCadences: how often a run reads its sink for seals and live views,
// and how long its writes must stand still, per sink. BigQuery bills every
// query, and its write counters count a row when the append step buffers it:
// the row is appended up to two flush intervals later (the tick after it
// arrives seals it, the next one appends it: sinks/bigquery
// TestFlushStepRules), so the quiet adds two intervals. With one, a stop
// settled 3 s + 5 s after the last row was counted while the step appends it
// up to 10 s after, and cancelled the job with the row still in its state.
func TestSinkCadences(t *testing.T) {
	o := Defaults()
	o.SealEvery, o.QuietPeriod, o.BQFlush = 10*time.Second, 3*time.Second, 5*time.Second
	for _, tc := range []struct {
		scheme string
		want   cadence
	}{
		{sink.SchemeSQLite, cadence{seal: 10 * time.Second, quiet: 3 * time.Second}},
		{sink.SchemeJSONL, cadence{seal: 10 * time.Second, quiet: 3 * time.Second}},
		{sink.SchemeBigQuery, cadence{seal: 5 * time.Minute, live: time.Minute, quiet: 13 * time.Second}},
	} {
		o.Sink.Scheme = tc.scheme
		if got := o.cadence(); got != tc.want {
			t.Errorf("%s: cadence %+v, want %+v", tc.scheme, got, tc.want)
		}
	}
}
