package sinks

import (
	"sync"
	"time"
)

// Committed write streams are reused across flushes, as Beam Java's
// BigQueryIO does with the Storage Write API: a new batch is sealed at the
// end of a stream the process wrote last, not into a new stream. Creating a
// stream per flush cost one CreateWriteStream per (table, shard) per flush
// interval, 5,760 an hour and more at 20,000 events/s, against a quota of
// 10,000 per project and region (docs/bigquery.md, "Streams").
const (
	// streamMaxAge retires a stream an hour after this process first
	// wrote to it: a bound on what one stream carries, a few creations an
	// hour per table.
	streamMaxAge = time.Hour
	// streamMaxIdle retires a stream nobody wrote to for this long; the
	// service may reclaim idle streams, and a quiet table needs few.
	streamMaxIdle = 10 * time.Minute
)

// streamPool holds, per table, the committed streams whose end this
// process knows: each entry is a stream and the offset where the last
// append to it, one this process sent and the service took as new rows,
// ended. flushStep takes an entry to seal a batch at that offset and puts
// one back after it appended a batch.
//
// It is a cache: losing it (a worker restarted, a key moved, an entry
// retired) costs a CreateWriteStream, never a row. Why reusing an entry is
// safe, also when the runner restores an older checkpoint:
//
//   - An entry (stream, end) is put only by the append that wrote the
//     stream's rows up to end, as new rows (no ALREADY_EXISTS); with
//     explicit offsets, exactly one append ever ends a stream at a given
//     offset, so an entry exists once, in one process.
//   - take removes the entry it returns: at most one batch is ever sealed
//     at (stream, end), in any timeline of any key. A restored state can
//     only hold that same batch (sealed before its first append), which
//     repeats the same rows at the same offsets; a restored buffer is
//     sealed anew at another entry or into a new stream.
//   - So while an entry is in a pool, nothing was written past its end:
//     a batch sealed there starts exactly at the stream's end, and an
//     ALREADY_EXISTS for it can only be its own earlier attempt.
//
// The zero of *streamPool (nil) keeps no entry: a new stream per batch.
type streamPool struct {
	now func() time.Time

	mu   sync.Mutex
	free map[string][]openStream // by table
	// born is when this process first used a stream, for streamMaxAge.
	born map[string]time.Time
}

// openStream is a committed stream and its end, as this process wrote it.
type openStream struct {
	Name    string
	End     int64
	Written time.Time
}

func newStreamPool(now func() time.Time) *streamPool {
	return &streamPool{now: now, free: map[string][]openStream{}, born: map[string]time.Time{}}
}

// take removes and returns a stream of table to seal a batch at its end,
// retiring the ones too old or too long idle.
func (p *streamPool) take(table string) (openStream, bool) {
	if p == nil {
		return openStream{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for name, t := range p.born {
		// Kept past streamMaxAge so that a stream out in a sealed batch
		// keeps its age when it comes back; then forgotten.
		if now.Sub(t) >= 2*streamMaxAge {
			delete(p.born, name)
		}
	}
	free := p.free[table]
	for len(free) > 0 {
		s := free[len(free)-1]
		free = free[:len(free)-1]
		if now.Sub(p.born[s.Name]) < streamMaxAge && now.Sub(s.Written) < streamMaxIdle {
			p.free[table] = free
			return s, true
		}
	}
	p.free[table] = free
	return openStream{}, false
}

// created notes a stream this process created.
func (p *streamPool) created(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.born[name] = p.now()
}

// put offers a stream whose rows this process just appended, as new rows,
// up to end.
func (p *streamPool) put(table, name string, end int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if _, ok := p.born[name]; !ok {
		// Sealed by another process or before a restart: its age counts
		// from here.
		p.born[name] = now
	}
	p.free[table] = append(p.free[table], openStream{Name: name, End: end, Written: now})
}
