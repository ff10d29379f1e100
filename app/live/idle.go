package live

import (
	"cmp"
	"slices"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// DefaultIdleEpisodes is how many ended idle episodes a monitor keeps.
const DefaultIdleEpisodes = 20

// IdleEpisode is a time a partition was idle (SPEC §2) as the monitor's snapshots saw it: the job
// reports idleness as a gauge, so a short episode may go unseen (IdleView.Moves counts all).
// SinceMs is the first snapshot that saw it idle, ActiveSeenMs the last before that saw it active,
// UntilMs the first that saw it active again; DurationMs runs to UntilMs, or for an ongoing
// episode to the snapshot or the job's end. WatermarkMs and Read are as first seen idle, ReadAfter
// as seen active again (the backlog it came back with).
type IdleEpisode struct {
	Partition    string `json:"partition"`
	SinceMs      int64  `json:"since_ms"`
	ActiveSeenMs int64  `json:"active_seen_ms,omitempty"`
	UntilMs      int64  `json:"until_ms,omitempty"`
	Ongoing      bool   `json:"ongoing"`
	DurationMs   int64  `json:"duration_ms"`
	WatermarkMs  *int64 `json:"watermark_ms,omitempty"`
	Read         int64  `json:"read"`
	ReadAfter    int64  `json:"read_after,omitempty"`
}

// IdleView is the idle episodes a snapshot shows: the ongoing ones and up to DefaultIdleEpisodes
// others, newest first (Dropped: the rest); Moves, each partition's moves to idle as the job
// counted them; WatchedSinceMs, the first snapshot with figures.
type IdleView struct {
	Episodes       []IdleEpisode `json:"episodes"`
	Dropped        int           `json:"dropped,omitempty"`
	Moves          []Counter     `json:"moves_to_idle"`
	WatchedSinceMs int64         `json:"watched_since_ms"`
}

// idleTracker follows each partition's idleness across snapshots; the Monitor guards it.
type idleTracker struct {
	since    int64
	seen     map[string]partSeen
	episodes []IdleEpisode // oldest first
	dropped  int
}

// partSeen is a partition at the latest snapshot.
type partSeen struct {
	at   int64
	idle bool
}

// add records the partitions as of at (epoch ms).
func (t *idleTracker) add(at int64, parts []Partition) {
	if t.seen == nil {
		t.seen, t.since = map[string]partSeen{}, at
	}
	for _, p := range parts {
		prev, known := t.seen[p.Name]
		switch {
		case p.Idle && (!known || !prev.idle):
			e := IdleEpisode{Partition: p.Name, SinceMs: at, Ongoing: true, Read: p.Read}
			if p.WatermarkMs != model.NoWatermark {
				wm := p.WatermarkMs
				e.WatermarkMs = &wm
			}
			if known {
				e.ActiveSeenMs = prev.at
			}
			t.episodes = append(t.episodes, e)
		case !p.Idle && known && prev.idle:
			// A partition has one ongoing episode at most, and trim keeps every ongoing one.
			e := &t.episodes[slices.IndexFunc(t.episodes, func(e IdleEpisode) bool { return e.Ongoing && e.Partition == p.Name })]
			e.UntilMs, e.Ongoing, e.DurationMs, e.ReadAfter = at, false, at-e.SinceMs, p.Read
		}
		t.seen[p.Name] = partSeen{at: at, idle: p.Idle}
	}
	t.trim()
}

// trim lets the oldest ended episodes go beyond DefaultIdleEpisodes.
func (t *idleTracker) trim() {
	drop := -DefaultIdleEpisodes
	for _, e := range t.episodes {
		if !e.Ongoing {
			drop++
		}
	}
	kept := t.episodes[:0]
	for _, e := range t.episodes {
		if !e.Ongoing && drop > 0 {
			drop--
			t.dropped++
			continue
		}
		kept = append(kept, e)
	}
	t.episodes = kept
}

// view is the episodes as of at (endedAt, when not 0, stops ongoing ones there).
func (t *idleTracker) view(at, endedAt int64, f Figures) *IdleView {
	v := &IdleView{Episodes: []IdleEpisode{}, Dropped: t.dropped, WatchedSinceMs: t.since}
	end := cmp.Or(endedAt, at)
	for _, e := range slices.Backward(t.episodes) {
		if e.Ongoing {
			e.DurationMs = max(0, end-e.SinceMs)
		}
		v.Episodes = append(v.Episodes, e)
	}
	for _, p := range f.Partitions {
		v.Moves = append(v.Moves, Counter{Name: p.Name, Value: f.Counts.Counters[string(metrics.IdleTransitions(p.Name))]})
	}
	return v
}
