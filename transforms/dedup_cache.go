package transforms

import (
	"sync"
	"time"
)

// DefaultDedupCacheBytes bounds the process-wide cache of decoded dedup
// shards (--dedup-cache).
const DefaultDedupCacheBytes = 1 << 30

// cacheIdleTTL is how long a cached shard may go unused before it is
// dropped: on a distributed runner a key that moved to another worker is
// never asked for here again, and a shard this worker still owns is used by
// every batch and every boundary timer, far more often than this.
const cacheIdleTTL = 10 * time.Minute

// shardCache is the process-wide cache of decoded shards: an optimisation
// only. An entry is trusted only when its token matches the one in the
// runner's state, and losing one (eviction, a restart) costs a reload from
// that state, never a verdict.
var shardCache = newShardCacheT()

type cacheKey struct {
	pipeline string // distinguishes pipelines (and tests) in one process
	shard    int
}

type cachedShard struct {
	token uint64
	st    *shardState
	bytes int64
	used  time.Time
}

type shardCacheT struct {
	mu        sync.Mutex
	limit     int64
	total     int64
	m         map[cacheKey]*cachedShard
	lastSweep time.Time
	now       func() time.Time
}

func newShardCacheT() *shardCacheT {
	return &shardCacheT{limit: DefaultDedupCacheBytes, m: map[cacheKey]*cachedShard{}, now: time.Now}
}

// setLimit sets the bound in bytes (the process's DoFns share the cache;
// the last setting wins, they all come from the same flag).
func (c *shardCacheT) setLimit(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.limit = n
	c.mu.Unlock()
}

// take removes and returns k's entry: the caller mutates the state, and a
// failure half-way must leave no stale entry behind.
func (c *shardCacheT) take(k cacheKey) (cachedShard, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return cachedShard{}, false
	}
	delete(c.m, k)
	c.total -= e.bytes
	return *e, true
}

// put stores k's state and evicts what the bound and the idle rule demand,
// returning how many entries it evicted.
func (c *shardCacheT) put(k cacheKey, token uint64, st *shardState) int {
	b := shardBytes(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if old, ok := c.m[k]; ok {
		c.total -= old.bytes
	}
	c.m[k] = &cachedShard{token: token, st: st, bytes: b, used: now}
	c.total += b
	evicted := 0
	if now.Sub(c.lastSweep) >= cacheIdleTTL/4 {
		c.lastSweep = now
		for ek, e := range c.m {
			if now.Sub(e.used) > cacheIdleTTL {
				c.evictLocked(ek, e)
				evicted++
			}
		}
	}
	for c.total > c.limit && len(c.m) > 0 {
		// Least recently used first; the entry just stored goes last, and
		// goes too when it alone exceeds the bound.
		var vk cacheKey
		var victim *cachedShard
		for ek, e := range c.m {
			if victim == nil || e.used.Before(victim.used) || (ek != k && vk == k) {
				vk, victim = ek, e
			}
		}
		c.evictLocked(vk, victim)
		evicted++
	}
	return evicted
}

func (c *shardCacheT) evictLocked(k cacheKey, e *cachedShard) {
	delete(c.m, k)
	c.total -= e.bytes
}

// shardBytes estimates a decoded shard's memory: its id table, plus the
// armed windows and fixed overhead.
func shardBytes(st *shardState) int64 { return st.ids.bytes() + int64(len(st.armed))*48 + 256 }
