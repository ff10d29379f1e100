package bigquery

import (
	"maps"
	"sync"
	"time"
)

// Committed streams are reused across flushes, as Beam Java's BigQueryIO
// does: a stream per flush would exceed the CreateWriteStream quota
// (docs/bigquery.md, "Streams"). A stream retires after streamMaxAge, or
// streamMaxIdle without writes (the service may reclaim idle streams).
const (
	streamMaxAge  = time.Hour
	streamMaxIdle = 10 * time.Minute
)

// streamPool caches, per table, streams whose end this process knows (put
// after an append of new rows, taken once to seal the next batch there), so
// an ALREADY_EXISTS can only be that batch's own retry, even under restored
// checkpoints. A nil pool keeps nothing: a new stream per batch.
type streamPool struct {
	now func() time.Time

	mu   sync.Mutex
	free map[string][]openStream // by table
	born map[string]time.Time
}

// openStream is a stream and its end, as this process wrote it.
type openStream struct {
	Name    string
	End     int64
	Written time.Time
}

func newStreamPool(now func() time.Time) *streamPool {
	return &streamPool{now: now, free: map[string][]openStream{}, born: map[string]time.Time{}}
}

// take removes and returns a stream of table, retiring old and idle ones.
func (p *streamPool) take(table string) (openStream, bool) {
	if p == nil {
		return openStream{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	// Kept longer, so a stream out in a sealed batch keeps its age.
	maps.DeleteFunc(p.born, func(_ string, t time.Time) bool { return now.Sub(t) >= 2*streamMaxAge })
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

// put offers a stream this process just appended to, as new rows, up to end.
func (p *streamPool) put(table, name string, end int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if _, ok := p.born[name]; !ok {
		// Sealed elsewhere or before a restart: its age counts from here.
		p.born[name] = now
	}
	p.free[table] = append(p.free[table], openStream{Name: name, End: end, Written: now})
}
