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
// elsewhere (pipeline.Options.Sized).
const DefaultDedupCacheBytes = 1 << 30

// DedupCacheBytesPerID is what one remembered id costs in the process cache
// at most: a 28-byte slot of the id table just after it grew (53 % full;
// docs/capacity.md).
const DedupCacheBytesPerID = idSlotBytes * 1.5 / idMaxLoad // 52.5

// cacheIdleTTL is how long a cached shard may go unused before it is dropped:
// a key that moved to another worker is never asked for here again, and one
// still owned is used by every batch and boundary timer, far more often.
const cacheIdleTTL = 10 * time.Minute

// shardCache is the process-wide cache of decoded shards, an optimisation
// only: an entry is trusted only while its token matches the runner's state,
// and losing one costs a reload, never a verdict.
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
	// ceiling caps want: what the memory limit leaves the cache
	// (applyMemoryLimit; 0 for none).
	ceiling   int64
	total     int64
	m         map[cacheKey]*cachedShard
	lastSweep time.Time
	now       func() time.Time
}

func newShardCacheT() *shardCacheT {
	return &shardCacheT{want: DefaultDedupCacheBytes, m: map[cacheKey]*cachedShard{}, now: time.Now}
}

// setLimit sets the bound in bytes; the last wins (all DoFns share the flag).
func (c *shardCacheT) setLimit(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.want = n
	c.mu.Unlock()
}

// setCeiling caps the bound at n bytes (0: no cap) from the next put on, and
// returns the bound last asked for and the one in force.
func (c *shardCacheT) setCeiling(n int64) (want, bound int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ceiling = n
	return c.want, c.limit()
}

// limit is the bound in force; the caller holds mu.
func (c *shardCacheT) limit() int64 {
	if c.ceiling > 0 {
		return min(c.want, c.ceiling)
	}
	return c.want
}

// take removes and returns k's entry (shardStore.load).
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
		// Least recently used first; the entry just stored last (and too
		// when it alone exceeds the bound).
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

// shardBytes estimates a decoded shard's memory: id table, held batches,
// armed windows and overhead.
func shardBytes(st *shardState) int64 {
	return st.ids.bytes() + st.pending.heldBytes + int64(len(st.armed))*48 + 256
}

// The process's memory limit (issue #25): the cache holds the worker's
// shards, 23 GiB on a 32 GiB worker at the design rate, and without a limit Go
// lets the heap reach twice what is live (GOGC=100), out of memory. Nothing
// outside can set GOMEMLIMIT on every runner (Dataflow starts the SDK
// container), so the dedup step applies it once per process, from Setup.

// MemoryLimitFor is the Go memory limit a worker with memory bytes applies
// when nothing set one: the SDK harness's three quarters in the capacity plan;
// the rest is the runner's (Dataflow's runner harness, Flink's TaskManager)
// and the kernel's.
func MemoryLimitFor(memory int64) int64 { return memory / 4 * 3 }

// DedupCacheCeiling is the most the cache may hold under a memory limit:
// the limit less what the rest of the process needs (bundles in flight, a
// shard being decoded, the revision step's rows), 1 GiB or a quarter of a
// small limit. cmd/scale plans workers whose --dedup-cache fits under it.
func DedupCacheCeiling(limit int64) int64 { return limit - min(1<<30, limit/4) }

// decideMemoryLimit leaves an explicit GOMEMLIMIT (env) or a limit already
// set (current) alone; else, when memory is known, it is MemoryLimitFor(memory).
// It returns the limit in force (math.MaxInt64 for none) and whether to set it.
func decideMemoryLimit(env string, current, memory int64) (limit int64, set bool) {
	if env != "" || current != math.MaxInt64 || memory <= 0 {
		return current, false
	}
	return MemoryLimitFor(memory), true
}

var memoryOnce sync.Once

// applyMemoryLimit applies decideMemoryLimit once per process and caps the
// shard cache at what the limit leaves it.
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
		// Info only when the limit lowers the cache (a plan that does not fit
		// the worker): a prism run's output is unchanged.
		level := slog.LevelDebug
		if bound < want {
			level = slog.LevelInfo
		}
		slog.Log(context.Background(), level, "dedup: process memory", "worker_memory", memory, "memory_limit", limit,
			"set_here", set, "cache_bound", bound, "dedup_cache", want)
	})
}

// WorkerMemory is the memory this process may use: its cgroup's limit when
// below the machine's total, else that total (0 when unreadable).
func WorkerMemory() int64 {
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	return memoryOf(read("/proc/meminfo"), read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
}

// memoryOf is the smallest positive of /proc/meminfo's MemTotal, cgroup v2
// memory.max ("max": none) and v1 memory.limit_in_bytes (huge: none).
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
