package watermark

import "github.com/revenue-stream/hourly/model"

// Board is one source's view of the watermarks its partitions reported: the
// minimum over partitions that a runner computes from per-partition
// estimators, kept where a runner shows a reader only part of them (prism:
// see internal/localrunner). Each reader reports min(own, Board.Min), which
// only lowers an estimate to the minimum the runner computes anyway. Not
// safe for concurrent use: the holder locks it.
type Board struct {
	parts map[string]*boardEntry
}

type boardEntry struct {
	watermark int64 // reported watermark, or model.NoWatermark
	seen      int64 // processing time (ms) of the last update
	done      bool  // the partition's restriction is finished
	idle      bool  // the partition was idle at its last update
}

// NewBoard is an empty board.
func NewBoard() *Board { return &Board{parts: map[string]*boardEntry{}} }

// Register adds the partitions a source will read, as seen at now with no
// watermark, unless they are known already: a partition that has not run
// yet holds the minimum like one that has seen nothing.
func (b *Board) Register(partitions []string, now int64) {
	for _, p := range partitions {
		if b.parts[p] == nil {
			b.parts[p] = &boardEntry{watermark: model.NoWatermark, seen: now}
		}
	}
}

// Update records a partition's reported watermark and idleness at
// processing time now.
func (b *Board) Update(partition string, watermark, now int64, idle bool) {
	e := b.parts[partition]
	if e == nil {
		e = &boardEntry{watermark: model.NoWatermark}
		b.parts[partition] = e
	}
	e.watermark = max(e.watermark, watermark)
	e.seen = max(e.seen, now)
	e.idle = idle
}

// Finish removes a partition from the minimum: its restriction is done, so
// the runner has moved its watermark to the end of time.
func (b *Board) Finish(partition string) {
	if e := b.parts[partition]; e != nil {
		e.done = true
	}
}

// Active is the smallest watermark among the other partitions (not except)
// that are active: unfinished, updated within staleAfter ms of now and not
// idle. ok is false when there is none: every other partition is idle (or
// finished), which is what --idle-advance decides about (Partition.Report).
func (b *Board) Active(except string, now, staleAfter int64) (w int64, ok bool) {
	return b.min(now, staleAfter, func(name string, e *boardEntry) bool { return name != except && !e.idle })
}

// Min is the smallest watermark among the unfinished partitions updated
// within staleAfter ms of now. ok is false when there is none.
func (b *Board) Min(now, staleAfter int64) (w int64, ok bool) {
	return b.min(now, staleAfter, func(string, *boardEntry) bool { return true })
}

// Holds reports whether partition holds the minimum: its watermark is the
// smallest Min counts (or it has none, or is not counted, as a partition
// that has not reported for staleAfter), so that reading it may move the
// minimum.
func (b *Board) Holds(partition string, now, staleAfter int64) bool {
	e := b.parts[partition]
	m, ok := b.Min(now, staleAfter)
	return e == nil || !ok || e.watermark <= m
}

func (b *Board) min(now, staleAfter int64, counts func(string, *boardEntry) bool) (w int64, ok bool) {
	for name, e := range b.parts {
		if e.done || now-e.seen > staleAfter || !counts(name, e) {
			continue
		}
		if !ok || e.watermark < w {
			w, ok = e.watermark, true
		}
	}
	return w, ok
}
