package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// Caps on the windows a report shows (see selectWindows).
const (
	// LatestWindows is how many of the latest keys are always shown: two days of hourly windows.
	LatestWindows = 48
	// MaxLateWindows caps the older keys shown for their LATE revisions.
	MaxLateWindows = 200
	// MaxRevisions caps the revisions shown per key (a stream may write hundreds): first and last.
	MaxRevisions = 8
)

// reportTrim is the report's cut of a long history: the first and last halves of MaxRevisions.
var reportTrim = Trim{Head: MaxRevisions / 2, Tail: MaxRevisions - MaxRevisions/2}

// Trim is how many of a key's first and last revisions a view shows.
type Trim struct{ Head, Tail int }

// trim keeps the first t.Head and last t.Tail of revs and says how many it left out.
func trim[T any](revs []T, t Trim) (kept []T, omitted int) {
	if len(revs) <= t.Head+t.Tail {
		return revs, 0
	}
	return append(slices.Clip(revs[:t.Head]), revs[len(revs)-t.Tail:]...), len(revs) - t.Head - t.Tail
}

// Window is one (window, dims) key as the views show it (the live page's JSON, the report's HTML
// and Markdown): its current row's figures and its revisions, oldest first, Omitted left out after
// the first Head.
type Window struct {
	Start         string     `json:"window_start"`
	End           string     `json:"window_end"`
	StartMs       int64      `json:"window_start_ms"`
	EndMs         int64      `json:"window_end_ms"`
	Dims          string     `json:"dims"`
	State         string     `json:"state"`
	Revenue       string     `json:"revenue"`
	RevenueMicros int64      `json:"revenue_micros"`
	Count         int64      `json:"count"`
	Revision      int64      `json:"revision"`
	Revisions     []Revision `json:"revisions"`
	Omitted       int        `json:"omitted"`
	Head          int        `json:"-"`
}

// Revision is one accepted snapshot of a window.
type Revision struct {
	Revision int64  `json:"revision"`
	State    string `json:"state"`
	Revenue  string `json:"revenue"`
	// RevenueMicros is Revenue in millionths of the currency.
	RevenueMicros int64 `json:"revenue_micros"`
	Count         int64 `json:"count"`
	// Writer is the writer other than the stream, if any.
	Writer string `json:"writer,omitempty"`
	Cause  string `json:"cause"` // Cause*
	// AddedEvents and AddedRevenueMicros are the change from the previous revision.
	AddedEvents        int64 `json:"added_events"`
	AddedRevenueMicros int64 `json:"added_revenue_micros"`
	// WrittenAt is the changelog's written_at, if the reader has it; AfterEndMs is WrittenAt − end.
	WrittenAt   string `json:"written_at,omitempty"`
	WrittenAtMs int64  `json:"written_at_ms,omitempty"`
	AfterEndMs  *int64 `json:"written_after_end_ms,omitempty"`
}

// The causes of a revision (Revision.Cause), SPEC §4: EARLY, ON_TIME, LATE and FINAL rows, and a
// reconcile --apply correction (writer reconcile:<run_id>).
const (
	CauseEarlyTick = "early_tick"
	CauseWatermark = "watermark"
	CauseLateData  = "late_data"
	CauseClosed    = "closed"
	CauseReconcile = "reconcile"
)

// NewWindow is h as shown, cut by t, each revision with its cause, its change from the one before
// and, when written knows it, when the sink wrote it.
func NewWindow(h WindowHistory, t Trim, written func(model.Row) (time.Time, bool)) Window {
	w := Window{Start: model.FormatTime(h.WindowStart), End: model.FormatTime(h.WindowEnd), StartMs: h.WindowStart, EndMs: h.WindowEnd,
		Dims: h.Dims, Head: t.Head}
	revs := make([]Revision, len(h.Revisions))
	var prev model.Row // the revision before: from nothing for the first
	for i, r := range h.Revisions {
		v := Revision{Revision: r.Revision, State: r.State.String(), Revenue: model.FormatMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros,
			Count: r.EventCount, Cause: cause(r), AddedEvents: r.EventCount - prev.EventCount, AddedRevenueMicros: r.RevenueMicros - prev.RevenueMicros}
		if r.Writer != "stream" {
			v.Writer = r.Writer
		}
		if at, ok := written(r); ok {
			after := at.UnixMilli() - h.WindowEnd
			v.WrittenAt, v.WrittenAtMs, v.AfterEndMs = at.UTC().Format("2006-01-02T15:04:05.000Z"), at.UnixMilli(), &after
		}
		revs[i], prev = v, r
	}
	w.Revisions, w.Omitted = trim(revs, t)
	if n := len(h.Revisions); n > 0 {
		last := h.Revisions[n-1]
		w.State, w.Revenue, w.RevenueMicros, w.Count, w.Revision = last.State.String(), model.FormatMicros(last.RevenueMicros), last.RevenueMicros, last.EventCount, last.Revision
	}
	return w
}

// cause is what made the job write r (see the Cause constants).
func cause(r model.Row) string {
	if r.ByReconcile() {
		return CauseReconcile
	}
	return stateCauses[r.State]
}

var stateCauses = map[model.ResultState]string{model.Early: CauseEarlyTick, model.OnTime: CauseWatermark, model.Late: CauseLateData, model.Final: CauseClosed}

// WindowsFromChangelog groups a changelog into one history per (window_start, dims) key, by key,
// each in revision order.
func WindowsFromChangelog(rows []model.Row) []WindowHistory {
	type key struct {
		start int64
		dims  string
	}
	byKey := map[key]*WindowHistory{}
	for _, r := range rows {
		k := key{r.WindowStart, r.Dims}
		w, ok := byKey[k]
		if !ok {
			w = &WindowHistory{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims}
			byKey[k] = w
		}
		w.Revisions = append(w.Revisions, r)
	}
	out := make([]WindowHistory, 0, len(byKey))
	for _, w := range byKey {
		slices.SortStableFunc(w.Revisions, func(a, b model.Row) int { return cmp.Compare(a.Revision, b.Revision) })
		out = append(out, *w)
	}
	slices.SortFunc(out, compareWindows) // keys are distinct: the order is total
	return out
}

func compareWindows(a, b WindowHistory) int {
	return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
}

// selectWindows picks the latest LatestWindows keys and, before them, up to MaxLateWindows with
// LATE revisions, newest first; it returns them in window order and the number left out.
func selectWindows(ws []WindowHistory) (shown []WindowHistory, omitted int) {
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, compareWindows)
	cut := max(0, len(sorted)-LatestWindows)
	var late []WindowHistory
	for i := cut - 1; i >= 0 && len(late) < MaxLateWindows; i-- {
		if sorted[i].HasLate() {
			late = append(late, sorted[i])
		}
	}
	slices.Reverse(late)
	shown = append(late, sorted[cut:]...)
	return shown, len(sorted) - len(shown)
}
