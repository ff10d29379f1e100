package transforms

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, string, model.Delta, func(model.Row), error](&revisionsFn{})
	register.Emitter1[model.Row]()
}

// Revisions turns per-key deltas (and early ticks) into versioned snapshot
// rows (EARLY, ON_TIME, LATE, FINAL) by triggers.WindowState's rules; after
// FINAL only a small closed marker stays.
//
// published (zero: none) seeds each key with the row a sink holds, read in
// Setup (sink.Published), so revisions continue after a restart without a dip;
// bound limits it to the windows the run can reach (app/launch/seal.go). Not a
// side input: with one, prism v2.77.0 stops feeding a streaming stateful stage
// after its first firings.
func Revisions(s beam.Scope, deltas beam.PCollection, p triggers.Policy, published sink.Spec, bound sink.SeedBound) beam.PCollection {
	s = s.Scope("Revisions")
	return beam.ParDo(s, &revisionsFn{
		Policy:    p,
		Published: published,
		Bound:     bound,
		State:     state.MakeValueState[[]byte]("window"),
		Firing:    timers.InEventTime("firing"),
	}, deltas)
}

// publishedRow is the row the sink held for key (window w) at the start. A
// window before the seed bound gets a closed marker even without a row: the
// restored watermarks are past its close (SPEC §4 rule (b)).
func (f *revisionsFn) publishedRow(key string, w *triggers.WindowState) (model.Row, bool) {
	if r, ok := f.published[key]; ok {
		return r, true
	}
	if !f.Bound.Needs(w.Start) {
		return model.Row{WindowStart: w.Start, WindowEnd: w.End, Dims: w.Dims, State: model.Final}, true
	}
	return model.Row{}, false
}

// Timer tags of the revision step.
const (
	tagOnTime = "on_time" // at window_end
	tagFinal  = "final"   // at window_end + allowed lateness
	tagForget = "forget"  // Policy.Lifetime after the close: drop the closed marker (its records then go to too_late)
)

type revisionsFn struct {
	Policy    triggers.Policy
	Published sink.Spec // the sink whose rows seed the keys (zero: none)
	Bound     sink.SeedBound
	published map[string]model.Row // read in Setup, by key
	// seedRows is how many rows Setup loaded, counted at the first load (a
	// counter needs a bundle's context).
	seedRows     int64
	seedReported bool
	seedCounter  beam.Counter

	State state.Value[[]byte]
	// Firing carries both event-time firings as tags of one timer family:
	// prism v2.77.0 never ends a bundle of a DoFn with two timer families.
	Firing timers.EventTime

	afterFinal, markersExpired, replayedFinal, adopted beam.Counter

	rows        [model.Final + 1]beam.Counter // by row state
	rowRevenues [model.Final + 1]beam.Distribution
}

func (f *revisionsFn) Setup(ctx context.Context) error {
	if f.Published.Scheme != "" {
		rows, err := sink.Published(ctx, f.Published, f.Bound)
		if err != nil {
			return fmt.Errorf("revisions: %w", err)
		}
		f.published = make(map[string]model.Row, len(rows))
		for _, r := range rows {
			f.published[WindowKey(r.WindowStart, r.Dims)] = r
		}
		f.seedRows = int64(len(rows))
		slog.Info("revisions: seeded from the sink", "sink", f.Published.String(), "rows", len(rows), "reach", f.Bound.String())
	}
	f.seedCounter = metrics.Counter(metrics.RevisionSeedRows)
	for _, st := range model.ResultStates {
		f.rows[st] = metrics.Counter(metrics.RowsBy(st.String()))
		f.rowRevenues[st] = metrics.Distribution(metrics.RowRevenueBy(st.String()))
	}
	f.afterFinal = metrics.Counter(metrics.AfterFinal)
	f.markersExpired = metrics.Counter(metrics.RevisionMarkersExpired)
	f.replayedFinal = metrics.Counter(metrics.ReplayedIntoFinal)
	f.adopted = metrics.Counter(metrics.RevisionsAdopted)
	return nil
}

func encodeWindow(w *triggers.WindowState) []byte {
	b := coders.Writer{}
	b.Varint(w.Start)
	b.Varint(w.End)
	b.String(w.Dims)
	b.Varint(w.RevenueMicros)
	b.Varint(w.Count)
	coders.WriteRow(&b, &w.Published)
	b.Bool(w.OnTimeDone)
	b.Bool(w.Final)
	b.Varint(w.HeldLateMicros)
	b.Varint(w.HeldLateCount)
	return b.B
}

func decodeWindow(b []byte) (*triggers.WindowState, error) {
	r := coders.Reader{B: b}
	w := &triggers.WindowState{Start: r.Varint(), End: r.Varint(), Dims: r.String(), RevenueMicros: r.Varint(), Count: r.Varint(),
		Published: coders.ReadRow(&r), OnTimeDone: r.Bool(), Final: r.Bool()}
	if len(r.B) > 0 { // absent in state of an older version: none held
		w.HeldLateMicros, w.HeldLateCount = r.Varint(), r.Varint()
	}
	if r.Err != nil {
		return nil, fmt.Errorf("revisions: decode window state: %w", r.Err)
	}
	return w, nil
}

func (f *revisionsFn) emit(ctx context.Context, emit func(model.Row), rows ...model.Row) {
	for _, r := range rows {
		f.rows[r.State].Inc(ctx, 1)
		f.rowRevenues[r.State].Update(ctx, r.RevenueMicros)
		emit(r)
	}
}

// load reads the key's window state, adopting the seeded row; nil when the
// key has none.
func (f *revisionsFn) load(ctx context.Context, sp state.Provider, key string) (*triggers.WindowState, error) {
	if !f.seedReported {
		f.seedReported = true
		f.seedCounter.Inc(ctx, f.seedRows)
	}
	b, ok, err := f.State.Read(sp)
	if err != nil {
		return nil, fmt.Errorf("revisions %s: read state: %w", key, err)
	}
	if !ok {
		return nil, nil
	}
	w, err := decodeWindow(b)
	if err != nil {
		return nil, err
	}
	// A newer seed row means state restored from an older snapshot.
	if p, ok := f.published[key]; ok && w.Adopt(p) {
		f.adopted.Inc(ctx, 1)
	}
	return w, nil
}

func (f *revisionsFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key string, d model.Delta, emit func(model.Row)) error {
	w, err := f.load(ctx, sp, key)
	if err != nil {
		return err
	}
	if w == nil {
		if d.Tick {
			return nil
		}
		start, dims, err := ParseWindowKey(key)
		if err != nil {
			return err
		}
		w = &triggers.WindowState{Start: start, End: f.Policy.WindowEnd(start), Dims: dims}
		if p, ok := f.publishedRow(key, w); ok {
			w.Adopt(p)
		}
		if !w.OnTimeDone { // also for late first data: ON_TIME releases what Add held
			f.Firing.Set(tp, time.UnixMilli(w.End), timers.WithTag(tagOnTime))
		}
		f.Firing.Set(tp, time.UnixMilli(f.Policy.CloseTime(start)), timers.WithTag(tagFinal))
		// Set here, not from the FINAL timer: prism v2.77.0 stalls on a
		// timer set from OnTimer once the watermark has passed it.
		f.Firing.Set(tp, time.UnixMilli(f.Policy.CloseTime(start)+f.Policy.Lifetime().Milliseconds()), timers.WithTag(tagForget))
	}
	switch {
	case w.Final:
		if p, ok := f.publishedRow(key, w); !d.Tick && d.Count > 0 && ok && p.State == model.Final {
			// A replay re-counts a window the sink holds as FINAL: settled;
			// reconcile owns any later correction.
			f.replayedFinal.Inc(ctx, d.Count)
			return nil
		}
		if !d.Tick && d.Count > 0 {
			// The watermark gate closes a window before FINAL can fire here:
			// an invariant broke; say so loudly rather than change a FINAL.
			f.afterFinal.Inc(ctx, d.Count)
			slog.Error("data reached a window after its FINAL row; not applied", "key", key, "events", d.Count, "revenue_micros", d.RevenueMicros)
		}
		return nil
	case d.Tick:
		if r, ok := w.Tick(); ok {
			f.emit(ctx, emit, r)
		}
	default:
		rows, err := w.Add(d.RevenueMicros, d.Count, d.AfterEnd)
		if err != nil {
			return fmt.Errorf("revisions %s: %w", key, err)
		}
		f.emit(ctx, emit, rows...)
	}
	return f.State.Write(sp, encodeWindow(w))
}

func (f *revisionsFn) OnTimer(ctx context.Context, sp state.Provider, _ timers.Provider, key string, t timers.Context, emit func(model.Row)) error {
	w, err := f.load(ctx, sp, key)
	if err != nil || w == nil {
		return err
	}
	var rows []model.Row
	switch t.Tag {
	case tagForget:
		if !w.Final {
			return nil // cannot happen: FINAL's timer is earlier
		}
		f.markersExpired.Inc(ctx, 1)
		return f.State.Clear(sp)
	case tagOnTime:
		rows, err = w.OnTime()
	case tagFinal:
		rows, err = w.Close() // ON_TIME's rows too, if it has not fired
		// Release the aggregation: keep the closed marker only.
		w.RevenueMicros, w.Count = 0, 0
	}
	if err != nil {
		return fmt.Errorf("revisions %s: %w", key, err)
	}
	f.emit(ctx, emit, rows...)
	return f.State.Write(sp, encodeWindow(w))
}
