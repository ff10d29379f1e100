package triggers

import (
	"errors"

	"github.com/revenue-stream/hourly/model"
)

// ErrOverflow: a window total left the int64 micros range (never wrapped).
var ErrOverflow = errors.New("revenue total overflows int64 micros")

// WindowState is the snapshot and revision bookkeeping of one (window_start,
// dims) key (SPEC §4). Along a key's changelog revisions increase, event_count
// never falls and result_state never goes back.
type WindowState struct {
	Start, End int64
	Dims       string

	RevenueMicros, Count int64
	// Published is the key's last row, by any run (Revision 0: none).
	Published model.Row
	// OnTimeDone: the ON_TIME moment passed, with or without a row.
	OnTimeDone bool
	Final      bool // the FINAL row was written
	// HeldLateMicros and HeldLateCount are late data held until ON_TIME (Add).
	HeldLateMicros, HeldLateCount int64
}

// Add accumulates a delta (afterEnd: judged after window_end, late data) and
// returns the rows to write, in order. Late data before this step's ON_TIME
// is held apart: other shards' on-time data may still be on its way, since
// runners fire timers across keys in any order.
func (w *WindowState) Add(revenueMicros, count int64, afterEnd bool) ([]model.Row, error) {
	if afterEnd && !w.OnTimeDone {
		return nil, addTo(&w.HeldLateMicros, &w.HeldLateCount, revenueMicros, count)
	}
	if err := addTo(&w.RevenueMicros, &w.Count, revenueMicros, count); err != nil || !w.OnTimeDone || count == 0 {
		return nil, err
	}
	return w.late(nil)
}

// addTo adds micros and count to the total *sum of *n events, refusing to wrap.
func addTo(sum, n *int64, micros, count int64) error {
	s, err := AddMicros(*sum, micros)
	if err != nil {
		return err
	}
	*sum, *n = s, *n+count
	return nil
}

// late counts the held late data in and appends a LATE row if one is due.
func (w *WindowState) late(rows []model.Row) ([]model.Row, error) {
	if w.HeldLateCount > 0 {
		if err := addTo(&w.RevenueMicros, &w.Count, w.HeldLateMicros, w.HeldLateCount); err != nil {
			return rows, err
		}
		w.HeldLateMicros, w.HeldLateCount = 0, 0
	}
	if r, ok := w.fire(model.Late); ok {
		rows = append(rows, r)
	}
	return rows, nil
}

// Adopt continues the changelog after p, a sink row this state has not
// published, so no revision is reissued and a FINAL keeps the window closed;
// the snapshot stays. It reports whether p was adopted.
func (w *WindowState) Adopt(p model.Row) bool {
	if p.Revision < w.Published.Revision || p.Revision == w.Published.Revision && (p.State != model.Final || w.Final) {
		return false
	}
	w.Published = p
	w.Final = w.Final || p.State == model.Final
	w.OnTimeDone = w.OnTimeDone || p.State >= model.OnTime
	return true
}

// Tick is an EARLY refresh: a row before ON_TIME, if the snapshot changed.
func (w *WindowState) Tick() (model.Row, bool) {
	if w.OnTimeDone || w.Final {
		return model.Row{}, false
	}
	return w.fire(model.Early)
}

// OnTime is this step's watermark passing window_end: the ON_TIME row (none
// without on-time data), then a LATE row with the held late data.
func (w *WindowState) OnTime() ([]model.Row, error) {
	var rows []model.Row
	if !w.OnTimeDone { // else ON_TIME was adopted from a sink row
		w.OnTimeDone = true
		// An EARLY row (adopted from the sink) proves data before the end.
		if w.Count > 0 || w.Published.Revision > 0 && w.Published.State == model.Early {
			if r, ok := w.fire(model.OnTime); ok {
				rows = append(rows, r)
			}
		}
	}
	if w.HeldLateCount == 0 {
		return rows, nil
	}
	return w.late(rows)
}

// Close is the watermark passing window_end + allowed lateness: OnTime's rows
// if it has not fired, then the FINAL row, always its own revision.
func (w *WindowState) Close() ([]model.Row, error) {
	if w.Final {
		return nil, nil
	}
	rows, err := w.OnTime()
	if err != nil {
		return rows, err
	}
	if r, ok := w.fire(model.Final); ok {
		rows = append(rows, r)
	}
	w.Final = true
	return rows, nil
}

// fire decides whether a firing writes a row of state st and builds it: EARLY is a refresh
// before window_end, ON_TIME the watermark passing it, LATE new data within the lateness, FINAL
// the watermark passing window_end + allowed lateness.
func (w *WindowState) fire(st model.ResultState) (model.Row, bool) {
	p := w.Published
	if p.Revision > 0 {
		if p.State == model.Final {
			return model.Row{}, false // FINAL stays FINAL
		}
		// No dip: never fewer events, never an earlier state. FINAL, and
		// ON_TIME after an adopted EARLY row, seal what was published: the
		// watermark does not wait for a replay to catch up.
		sealed := st == model.Final || st == model.OnTime && p.State == model.Early
		if !sealed && (w.Count < p.EventCount || st < p.State) {
			return model.Row{}, false
		}
		// Nothing new: same snapshot and state, or a LATE relabel.
		same := w.Count == p.EventCount && w.RevenueMicros == p.RevenueMicros
		if same && (st == p.State && st != model.Final || st == model.Late) {
			return model.Row{}, false
		}
	}
	if st == model.Final && w.Count == 0 && p.Revision == 0 {
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
	if (st == model.Final || st == model.OnTime) && w.Count < p.EventCount {
		// A replay may not rebuild the window (yet): the row seals what was published.
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
