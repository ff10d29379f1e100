package transforms

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultDedupCacheBytes bounds the process-wide cache of decoded dedup
// shards (--dedup-cache) on prism, and is the least the launcher sizes it to
// elsewhere (pipeline.DedupCacheFor).
const DefaultDedupCacheBytes = 1 << 30

// DedupCacheBytesPerID is what one remembered id costs in the process cache
// at most: a 28-byte slot of the id table just after it grew (53 % full;
// docs/capacity.md).
const DedupCacheBytesPerID = idSlotBytes * 1.5 / idMaxLoad // 52.5

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
	mu   sync.Mutex
	want int64 // the last setLimit
	// ceiling caps want whatever the flag says: what the process's memory
	// limit leaves for the cache (applyMemoryLimit; 0 for none).
	ceiling   int64
	total     int64
	m         map[cacheKey]*cachedShard
	lastSweep time.Time
	now       func() time.Time
}

func newShardCacheT() *shardCacheT {
	return &shardCacheT{want: DefaultDedupCacheBytes, m: map[cacheKey]*cachedShard{}, now: time.Now}
}

// setLimit sets the bound in bytes (the process's DoFns share the cache;
// the last setting wins, they all come from the same flag).
func (c *shardCacheT) setLimit(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.want = n
	c.mu.Unlock()
}

// setCeiling caps the bound at n bytes from now on (0: no cap), and returns
// the bound last asked for (setLimit) and the bound in force. Entries above
// it go at the next put.
func (c *shardCacheT) setCeiling(n int64) (want, bound int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ceiling = n
	return c.want, c.limit()
}

// limit is the bound in force: the last setLimit, capped by the ceiling.
// The caller holds mu.
func (c *shardCacheT) limit() int64 {
	if c.ceiling > 0 {
		return min(c.want, c.ceiling)
	}
	return c.want
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
	c.dropLocked(k, e)
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
				c.dropLocked(ek, e)
				evicted++
			}
		}
	}
	for c.total > c.limit() && len(c.m) > 0 {
		// Least recently used first; the entry just stored goes last, and
		// goes too when it alone exceeds the bound.
		var vk cacheKey
		var victim *cachedShard
		for ek, e := range c.m {
			if victim == nil || e.used.Before(victim.used) || (ek != k && vk == k) {
				vk, victim = ek, e
			}
		}
		c.dropLocked(vk, victim)
		evicted++
	}
	return evicted
}

func (c *shardCacheT) dropLocked(k cacheKey, e *cachedShard) {
	delete(c.m, k)
	c.total -= e.bytes
}

// shardBytes estimates a decoded shard's memory: its id table, the batches
// it holds for position order, plus the armed windows and fixed overhead.
func shardBytes(st *shardState) int64 {
	return st.ids.bytes() + st.pending.heldBytes + int64(len(st.armed))*48 + 256
}

// The process's memory limit (issue #25). The cache holds what the worker's
// shards hold, 23 GiB on a 32 GiB worker at the design rate; without a
// memory limit Go lets the heap reach twice what is live (GOGC=100) before
// it collects, and such a worker runs out of memory. Nothing outside the
// worker can set its GOMEMLIMIT on every runner (Dataflow starts the SDK
// container itself), so the dedup step applies the rule below once per
// process, from Setup, on every runner.

// MemoryLimitFor is the Go memory limit a worker with memory bytes applies
// when nothing set one: three quarters of it, the share the capacity plan
// gives the SDK harness; the rest is the runner's (Dataflow's runner
// harness, Flink's TaskManager) and the kernel's.
func MemoryLimitFor(memory int64) int64 { return memory / 4 * 3 }

// DedupCacheCeiling is the most the cache may hold under a memory limit:
// the limit less what the rest of the process needs (bundles in flight, a
// shard being decoded, the revision step's rows), 1 GiB or a quarter of a
// small limit. cmd/scale plans workers whose --dedup-cache fits under it.
func DedupCacheCeiling(limit int64) int64 { return limit - min(1<<30, limit/4) }

// decideMemoryLimit is the rule: an explicit GOMEMLIMIT (env, the
// runtime's own parse of it in current) or a limit something in the process
// already set is left alone; else, when the worker's memory is known, the
// limit is MemoryLimitFor(memory). It returns the limit in force
// (math.MaxInt64 for none) and whether to set it.
func decideMemoryLimit(env string, current, memory int64) (limit int64, set bool) {
	if env != "" || current != math.MaxInt64 || memory <= 0 {
		return current, false
	}
	return MemoryLimitFor(memory), true
}

var memoryOnce sync.Once

// applyMemoryLimit applies the rule to this process once (the first
// Setup of a dedup DoFn), and caps the shard cache at what the limit in
// force leaves it.
func applyMemoryLimit() {
	memoryOnce.Do(func() {
		memory := WorkerMemory()
		limit, set := decideMemoryLimit(os.Getenv("GOMEMLIMIT"), debug.SetMemoryLimit(-1), memory)
		if set {
			debug.SetMemoryLimit(limit)
		}
		if limit == math.MaxInt64 {
			return
		}
		want, bound := shardCache.setCeiling(DedupCacheCeiling(limit))
		// One line when the limit lowers the cache (a plan that does not
		// fit the worker), else at debug: a prism run's output is unchanged.
		level := slog.LevelDebug
		if bound < want {
			level = slog.LevelInfo
		}
		slog.Log(context.Background(), level, "dedup: process memory", "worker_memory", memory, "memory_limit", limit,
			"set_here", set, "cache_bound", bound, "dedup_cache", want)
	})
}

// WorkerMemory is the memory this process may use: its cgroup's limit
// when it has one below the machine's, else the machine's total (0 when
// none can be read).
func WorkerMemory() int64 {
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	return memoryOf(read("/proc/meminfo"), read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
}

// memoryOf reads WorkerMemory's files: /proc/meminfo's MemTotal, and a
// cgroup v2 memory.max ("max" for none) or v1 memory.limit_in_bytes (a
// huge figure for none), the smallest positive one.
func memoryOf(meminfo, cgroupV2, cgroupV1 string) int64 {
	total := int64(0)
	for line := range strings.Lines(meminfo) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err == nil {
				total = kb << 10
			}
		}
	}
	for _, c := range []string{cgroupV2, cgroupV1} {
		if n, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}
