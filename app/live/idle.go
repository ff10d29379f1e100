package live

import (
	"cmp"
	"slices"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// DefaultIdleEpisodes is how many idle episodes a monitor keeps, besides
// the ongoing ones.
const DefaultIdleEpisodes = 20

// IdleEpisode is a time a source partition was idle (out of the watermark
// minimum, SPEC §2) as the monitor saw it. Nothing stores idleness: the
// job reports it as a gauge (revenue/partition_idle_<partition>), which the
// monitor reads at each snapshot, so an episode's bounds are those of the
// snapshots that saw it begin and end (a second apart while the page is
// open), and an episode shorter than that may go unseen (IdleView.Moves
// counts every one).
type IdleEpisode struct {
	Partition string `json:"partition"`
	// SinceMs is the first snapshot that saw the partition idle;
	// ActiveSeenMs the last one before that saw it active (absent: it was
	// idle when the monitor first saw it). The move to idle lies between.
	SinceMs      int64 `json:"since_ms"`
	ActiveSeenMs int64 `json:"active_seen_ms,omitempty"`
	// UntilMs is the first snapshot that saw it active again, absent
	// while Ongoing.
	UntilMs int64 `json:"until_ms,omitempty"`
	Ongoing bool  `json:"ongoing"`
	// DurationMs is UntilMs (while ongoing: the snapshot's time, or the
	// job's end) − SinceMs.
	DurationMs int64 `json:"duration_ms"`
	// WatermarkMs is the partition's watermark when it was first seen
	// idle: where it stood while the others moved on (absent: none yet).
	WatermarkMs *int64 `json:"watermark_ms,omitempty"`
	// Read is the records read from the partition when it was first seen
	// idle, and ReadAfter when it was first seen active again: what it
	// delivered meanwhile (the backlog it came back with, as far as the
	// job's committed counters had it).
	Read      int64 `json:"read"`
	ReadAfter int64 `json:"read_after,omitempty"`
}

// IdleView is the idle episodes a snapshot shows.
type IdleView struct {
	// Episodes are the latest, newest first: the ongoing ones and at most
	// DefaultIdleEpisodes others; Dropped counts the older ones let go.
	Episodes []IdleEpisode `json:"episodes"`
	Dropped  int           `json:"dropped,omitempty"`
	// Moves is each partition's moves to idle as the job counted them
	// (revenue/idle_transitions_<partition>): all of them, also those
	// before the monitor looked or between two of its snapshots.
	Moves []Counter `json:"moves_to_idle"`
	// WatchedSinceMs is the first snapshot with figures: the episodes
	// begin there.
	WatchedSinceMs int64 `json:"watched_since_ms"`
}

// idleTracker follows each partition's idleness from snapshot to
// snapshot. It is not safe for concurrent use: the Monitor guards it.
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
	open int // the index of its ongoing episode in episodes, when idle
}

// add records the partitions as of at (epoch ms).
func (t *idleTracker) add(at int64, parts []Partition) {
	if t.seen == nil {
		t.seen, t.since = map[string]partSeen{}, at
	}
	for _, p := range parts {
		prev, known := t.seen[p.Name]
		cur := partSeen{at: at, idle: p.Idle, open: -1}
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
			cur.open = len(t.episodes) - 1
		case p.Idle:
			cur.open = prev.open
		case known && prev.idle:
			e := &t.episodes[prev.open]
			e.UntilMs, e.Ongoing, e.DurationMs, e.ReadAfter = at, false, at-e.SinceMs, p.Read
		}
		t.seen[p.Name] = cur
	}
	t.trim()
}

// trim lets the oldest ended episodes go beyond DefaultIdleEpisodes.
func (t *idleTracker) trim() {
	ended := 0
	for _, e := range t.episodes {
		if !e.Ongoing {
			ended++
		}
	}
	if ended <= DefaultIdleEpisodes {
		return
	}
	drop := ended - DefaultIdleEpisodes
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
	for i, e := range t.episodes { // the ongoing ones moved
		if e.Ongoing {
			s := t.seen[e.Partition]
			s.open = i
			t.seen[e.Partition] = s
		}
	}
}

// view is the episodes as of at (epoch ms; endedAt, when not 0, stops the
// ongoing ones' durations there), with f's counts of moves to idle.
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
		v.Moves = append(v.Moves, Counter{p.Name, f.Counts.Counters[string(metrics.IdleTransitions(p.Name))]})
	}
	return v
}
