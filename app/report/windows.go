package report

import (
	"cmp"
	"slices"

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

// trimRevisions keeps the first and last revisions and returns how many it left out.
func trimRevisions(revs []model.Row) (head, tail []model.Row, omitted int) {
	if len(revs) <= MaxRevisions {
		return revs, nil, 0
	}
	h := MaxRevisions / 2
	t := MaxRevisions - h
	return revs[:h], revs[len(revs)-t:], len(revs) - MaxRevisions
}

// WindowsFromChangelog groups a changelog into one history per (window_start, dims) key, by key,
// each in revision order.
func WindowsFromChangelog(rows []model.Row) []WindowHistory {
	type key struct {
		start int64
		dims  string
	}
	byKey := map[key]*WindowHistory{}
	var keys []key
	for _, r := range rows {
		k := key{r.WindowStart, r.Dims}
		w, ok := byKey[k]
		if !ok {
			w = &WindowHistory{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims}
			byKey[k] = w
			keys = append(keys, k)
		}
		w.Revisions = append(w.Revisions, r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.dims, b.dims))
	})
	out := make([]WindowHistory, 0, len(keys))
	for _, k := range keys {
		w := byKey[k]
		slices.SortStableFunc(w.Revisions, func(a, b model.Row) int { return cmp.Compare(a.Revision, b.Revision) })
		out = append(out, *w)
	}
	return out
}

// selectWindows picks the latest LatestWindows keys and, before them, up to MaxLateWindows with
// LATE revisions, newest first; it returns them in window order and the number left out.
func selectWindows(ws []WindowHistory) (shown []WindowHistory, omitted int) {
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, func(a, b WindowHistory) int {
		return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
	})
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
