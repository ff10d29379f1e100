package main

import (
	"math"
	"sort"

	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/transforms"
)

// kept is how long a shard holds an id at its peak, as the launcher sizes the cache for: the
// retention, the window whose expiry is next and the watermark's lag.
var kept = retention + policy.Window + bound

// workersFor plans the workers for rate over shards: enough vCPUs for the rate, and enough workers
// that the launcher's --dedup-cache for that count (pipeline.DedupCacheFor: the ids of the shards
// one worker owns at transforms.DedupCacheBytesPerID) fits under the cap the workers put on their
// cache (transforms.DedupCacheCeiling of the memory limit they apply), so that every worker caches
// every shard it owns (an uncached shard reloads its key for every batch). It returns that count,
// its cache and the cap; ok is false when not even a worker of one shard can cache it.
func workersFor(o options, rate, shards int) (workers int, cache, ceiling int64, ok bool) {
	ceiling = transforms.DedupCacheCeiling(transforms.MemoryLimitFor(o.memoryBytes()))
	cacheFor := func(w int) int64 { return int64(pipeline.DedupCacheFor("flink", rate, shards, w, kept)) }
	least := max(1, int(math.Ceil(float64(rate)/(float64(o.vcpus)*o.vcpuRate))))
	// The cache falls as the workers grow, down to one shard a worker at shards workers.
	workers = least + sort.Search(max(shards-least, 0), func(i int) bool { return cacheFor(least+i) <= ceiling })
	cache = cacheFor(workers)
	return workers, cache, ceiling, cache <= ceiling
}

func (o options) memoryBytes() int64 { return int64(o.memGiB * (1 << 30)) }
