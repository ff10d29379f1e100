package sources

import (
	"sync"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// board is the process-wide view of every partition's reported watermark,
// per source (one ReadFolder application). Each reader reports
// min(own, board) so that the runner's stage watermark is the minimum over
// partitions even when prism keeps only the last bundle's residual
// watermarks (see the package doc).
type board struct {
	mu      sync.Mutex
	sources map[string]map[string]*boardEntry
}

type boardEntry struct {
	watermark int64 // reported watermark, or model.NoWatermark
	seen      int64 // processing time (ms) of the last update
	done      bool  // the partition's restriction is finished
	idle      bool  // the partition was idle at its last update
}

var sharedBoard = &board{sources: map[string]map[string]*boardEntry{}}

// register adds the partitions a source will read, as seen at now with no
// watermark, unless they are known already: a partition that has not run
// yet holds the minimum like one that has seen nothing.
func (b *board) register(source string, partitions []string, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := b.sources[source]
	if parts == nil {
		parts = map[string]*boardEntry{}
		b.sources[source] = parts
	}
	for _, p := range partitions {
		if parts[p] == nil {
			parts[p] = &boardEntry{watermark: model.NoWatermark, seen: now}
		}
	}
}

// update records a partition's reported watermark and idleness at
// processing time now.
func (b *board) update(source, partition string, watermark, now int64, idle bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := b.sources[source]
	if parts == nil {
		parts = map[string]*boardEntry{}
		b.sources[source] = parts
	}
	e := parts[partition]
	if e == nil {
		e = &boardEntry{watermark: model.NoWatermark}
		parts[partition] = e
	}
	e.watermark = max(e.watermark, watermark)
	e.seen = max(e.seen, now)
	e.idle = idle
}

// active is the smallest watermark among the source's other partitions
// (not except) that are active: unfinished, updated within staleAfter ms of
// now and not idle. ok is false when there is none: every other partition
// is idle (or finished), which is what --idle-advance decides about.
func (b *board) active(source, except string, now, staleAfter int64) (w int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, e := range b.sources[source] {
		if name == except || e.done || e.idle || now-e.seen > staleAfter {
			continue
		}
		if !ok || e.watermark < w {
			w, ok = e.watermark, true
		}
	}
	return w, ok
}

// finish removes a partition from the minimum: its restriction is done, so
// the runner has moved its watermark to the end of time.
func (b *board) finish(source, partition string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.sources[source][partition]; e != nil {
		e.done = true
	}
}

// min is the smallest watermark among the source's unfinished partitions
// updated within staleAfter ms of now. ok is false when there is none.
func (b *board) min(source string, now, staleAfter int64) (w int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.sources[source] {
		if e.done || now-e.seen > staleAfter {
			continue
		}
		if !ok || e.watermark < w {
			w, ok = e.watermark, true
		}
	}
	return w, ok
}

// idleLogEvery is how often, at most, a source logs that its watermark
// advances because every partition is idle: once when it starts, then
// while it lasts, rather than at every poll of every partition.
const idleLogEvery = time.Minute

// idleLog remembers when each source last logged an all-idle advance. A
// cache: losing it only repeats a log line.
var idleLog = &throttle{last: map[string]int64{}}

type throttle struct {
	mu   sync.Mutex
	last map[string]int64
}

// due reports whether key may log at processing time now (ms), and if so
// records it.
func (t *throttle) due(key string, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[key]; ok && now-last < idleLogEvery.Milliseconds() {
		return false
	}
	t.last[key] = now
	return true
}
