package watermark

import "github.com/revenue-stream/hourly/model"

// Board is one source's view of its partitions' watermarks, for runners that
// show a reader only some (prism). Not safe for concurrent use.
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

// Register adds unknown partitions as seen at now with no watermark, so one
// that has not run yet holds the minimum.
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

// Finish removes a partition whose restriction is done from the minimum.
func (b *Board) Finish(partition string) {
	if e := b.parts[partition]; e != nil {
		e.done = true
	}
}

// Active is Min over the partitions other than except that are not idle; ok
// is false when there is none (the case --idle-advance decides).
func (b *Board) Active(except string, now, staleAfter int64) (w int64, ok bool) {
	return b.min(now, staleAfter, func(name string, e *boardEntry) bool { return name != except && !e.idle })
}

// Min is the smallest watermark among the unfinished partitions updated
// within staleAfter ms of now. ok is false when there is none.
func (b *Board) Min(now, staleAfter int64) (w int64, ok bool) {
	return b.min(now, staleAfter, func(string, *boardEntry) bool { return true })
}

// Holds reports whether reading partition may move Min: its watermark is the
// smallest, or Min has none, or the partition is unknown.
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
