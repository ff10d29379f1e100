package triggers

import (
	"errors"

	"github.com/revenue-stream/hourly/model"
)

// Firing is why a snapshot row is being considered.
type Firing uint8

const (
	// FiringEarly is a processing-time refresh before the window end.
	FiringEarly Firing = iota + 1
	// FiringOnTime is the watermark passing window_end.
	FiringOnTime
	// FiringLate is new data after the on-time firing, within lateness.
	FiringLate
	// FiringFinal is the watermark passing window_end + allowed lateness.
	FiringFinal
)

// State maps a firing to the row's result state.
func (f Firing) State() model.ResultState {
	switch f {
	case FiringEarly:
		return model.Early
	case FiringOnTime:
		return model.OnTime
	case FiringLate:
		return model.Late
	case FiringFinal:
		return model.Final
	}
	return model.StateUnknown
}

// ErrOverflow is returned when a window total leaves the int64 micros range
// (about 9.2e12 currency units): exactness is never traded for a wrap-around.
var ErrOverflow = errors.New("revenue total overflows int64 micros")

// WindowState is the accumulating snapshot and revision bookkeeping of one
// (window_start, dims) key. It is the rule book of SPEC §4 for when each
// state is written; the Revisions DoFn stores it and calls these methods.
//
// Published holds the last row written for the key, by this run or (after a
// restart) by an earlier one: along a key's changelog, revisions strictly
// increase, event_count never falls and result_state never goes back, so a
// restarted job catching up stays silent until it has more to say.
type WindowState struct {
	Start, End int64
	Dims       string

	RevenueMicros, Count int64

	Published model.Row // Revision 0 = nothing published yet

	// OnTimeDone is set once the ON_TIME moment has passed, whether or not an
	// ON_TIME row was written (a window whose first data comes after the
	// watermark passed its end starts with a LATE row).
	OnTimeDone bool
	// Final is set once the FINAL row has been written: the window is closed.
	Final bool

	// HeldLateMicros and HeldLateCount are late data that came before the
	// ON_TIME moment, held apart until it (see Add).
	HeldLateMicros, HeldLateCount int64
}

// Add accumulates a delta. afterEnd says the data was judged after the
// watermark passed window_end (so it is late data, not on-time data).
// It returns the rows to write, in order.
//
// Late data that comes before this step's ON_TIME moment (OnTime) is held
// apart, not counted into the snapshot: it proves that the watermark of the
// dedup shard that judged it passed window_end, not that this step's did,
// and on-time data of the window judged on other shards may still be on
// its way (a runner fires the shards' timers in any order across keys; CI
// on 01dc6ce: C's delta reached the step before A's and B's, LATE 20 as
// revision 1 and no ON_TIME). OnTime writes the ON_TIME row of the on-time
// data, then a LATE row with what was held.
func (w *WindowState) Add(revenueMicros, count int64, afterEnd bool) ([]model.Row, error) {
	if afterEnd && !w.OnTimeDone {
		s, err := AddMicros(w.HeldLateMicros, revenueMicros)
		if err != nil {
			return nil, err
		}
		w.HeldLateMicros, w.HeldLateCount = s, w.HeldLateCount+count
		return nil, nil
	}
	s, err := AddMicros(w.RevenueMicros, revenueMicros)
	if err != nil {
		return nil, err
	}
	w.RevenueMicros = s
	w.Count += count
	if !w.OnTimeDone || count == 0 {
		return nil, nil
	}
	return w.late(nil)
}

// late counts the held late data into the snapshot (a no-op without) and
// appends the LATE row, if there is one to write, to rows.
func (w *WindowState) late(rows []model.Row) ([]model.Row, error) {
	if w.HeldLateCount > 0 {
		s, err := AddMicros(w.RevenueMicros, w.HeldLateMicros)
		if err != nil {
			return rows, err
		}
		w.RevenueMicros, w.Count = s, w.Count+w.HeldLateCount
		w.HeldLateMicros, w.HeldLateCount = 0, 0
	}
	if r, ok := w.fire(FiringLate); ok {
		rows = append(rows, r)
	}
	return rows, nil
}

// Adopt continues the key's changelog after p, a row the sink holds, when
// this state has not published it: at a start (the key's first state), and
// after the step's state was rolled back to an older snapshot (a Flink
// failover restores its last checkpoint) while the sink kept the rows
// written since. Revisions then go on after the sink's, so none is reissued
// with other content; the no-dip rules keep the restored job silent until
// it has more to say than p; a FINAL the sink holds keeps the window
// closed (a closed marker, revision 0, closes a fresh state). The state's
// own snapshot stays: the restored job rebuilds it from the records its
// sources re-read. It reports whether p was adopted.
func (w *WindowState) Adopt(p model.Row) bool {
	if p.Revision < w.Published.Revision || p.Revision == w.Published.Revision && (p.State != model.Final || w.Final) {
		return false
	}
	w.Published = p
	w.Final = w.Final || p.State == model.Final
	w.OnTimeDone = w.OnTimeDone || p.State >= model.OnTime
	return true
}

// Tick is an EARLY refresh: a row only before the on-time firing and only
// when the snapshot changed since the last row.
func (w *WindowState) Tick() (model.Row, bool) {
	if w.OnTimeDone || w.Final {
		return model.Row{}, false
	}
	return w.fire(FiringEarly)
}

// OnTime is this step's watermark passing window_end: the ON_TIME row of
// the on-time data (none when the window has none: its first row is then
// LATE), then a LATE row with the late data held until now (see Add).
func (w *WindowState) OnTime() ([]model.Row, error) {
	if w.OnTimeDone {
		if w.HeldLateCount == 0 {
			return nil, nil
		}
		// The ON_TIME moment was adopted from a sink row (Adopt).
		return w.late(nil)
	}
	w.OnTimeDone = true
	var rows []model.Row
	if w.Count > 0 {
		if r, ok := w.fire(FiringOnTime); ok {
			rows = append(rows, r)
		}
	}
	if w.HeldLateCount == 0 {
		return rows, nil
	}
	return w.late(rows)
}

// Close is the watermark passing window_end + allowed lateness: the rows
// of OnTime if it has not fired (with zero lateness both moments are due
// together, and ON_TIME still comes first, as its own revision), then the
// FINAL row, always its own revision, even when nothing changed.
func (w *WindowState) Close() ([]model.Row, error) {
	if w.Final {
		return nil, nil
	}
	rows, err := w.OnTime()
	if err != nil {
		return rows, err
	}
	if r, ok := w.fire(FiringFinal); ok {
		rows = append(rows, r)
	}
	w.Final = true
	return rows, nil
}

// fire decides whether a firing writes a row and builds it.
func (w *WindowState) fire(f Firing) (model.Row, bool) {
	st := f.State()
	p := w.Published
	if p.Revision > 0 {
		if p.State == model.Final {
			return model.Row{}, false // FINAL stays FINAL
		}
		// No dip: never fewer events, never an earlier state. FINAL is exempt:
		// it seals the key (see below).
		if f != FiringFinal && (w.Count < p.EventCount || st < p.State) {
			return model.Row{}, false
		}
		// Nothing new to say: same snapshot, same state; or a LATE row
		// that would only relabel the published snapshot (a replay that
		// rebuilt it after an adopted ON_TIME or LATE row).
		same := w.Count == p.EventCount && w.RevenueMicros == p.RevenueMicros
		if same && (st == p.State && f != FiringFinal || f == FiringLate) {
			return model.Row{}, false
		}
		// An EARLY refresh only when the snapshot changed.
		if f == FiringEarly && w.Count == p.EventCount && w.RevenueMicros == p.RevenueMicros {
			return model.Row{}, false
		}
	}
	if f == FiringFinal && w.Count == 0 && p.Revision == 0 {
		return model.Row{}, false // a window that never had data has no rows
	}
	r := model.Row{
		WindowStart:   w.Start,
		WindowEnd:     w.End,
		Dims:          w.Dims,
		RevenueMicros: w.RevenueMicros,
		EventCount:    w.Count,
		Revision:      p.Revision + 1,
		State:         st,
		Writer:        "stream",
	}
	if f == FiringFinal && w.Count < p.EventCount {
		// After a restart the replay may not have rebuilt the whole window
		// (its oldest records were behind the replay horizon): FINAL then
		// seals what was already published rather than dipping.
		r.RevenueMicros, r.EventCount = p.RevenueMicros, p.EventCount
	}
	w.Published = r
	return r, true
}

// AddMicros adds two exact amounts, refusing to wrap around.
func AddMicros(a, b int64) (int64, error) {
	s := a + b
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, ErrOverflow
	}
	return s, nil
}
