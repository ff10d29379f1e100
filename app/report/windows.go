package report

import (
	"cmp"
	"slices"

	"github.com/revenue-stream/hourly/model"
)

// Caps on the windows a report shows (see selectWindows).
const (
	// LatestWindows is how many of the latest keys are always shown: two
	// days of hourly windows without dimensions.
	LatestWindows = 48
	// MaxLateWindows caps the older keys shown because they received LATE
	// revisions, the ones a reader of the report wants to see.
	MaxLateWindows = 200
	// MaxRevisions caps the revisions shown per key: a stream may write a
	// LATE revision for every late event, hundreds for one window. The first
	// and last ones tell the story; the middle is counted.
	MaxRevisions = 8
)

// trimRevisions keeps the first and last revisions of a long history and
// returns how many it left out between them.
func trimRevisions(revs []model.Row) (head, tail []model.Row, omitted int) {
	if len(revs) <= MaxRevisions {
		return revs, nil, 0
	}
	h := MaxRevisions / 2
	t := MaxRevisions - h
	return revs[:h], revs[len(revs)-t:], len(revs) - MaxRevisions
}

// WindowsFromChangelog groups a sink's changelog (sinks.SQLite.Changelog)
// into one history per (window_start, dims) key, ordered by window start then
// dims, each key's revisions in increasing revision order. The input order
// does not matter.
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

// selectWindows picks what a report shows: the latest LatestWindows keys
// (by window start, then dims) and, before them, up to MaxLateWindows keys
// that received LATE revisions, the most recent ones first to go in. It
// returns them in window order and the number left out.
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
