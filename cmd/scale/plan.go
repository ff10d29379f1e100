package main

import (
	"math"
	"sort"

	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/transforms"
)

// sized is the launcher's dedup sizing (pipeline.Options.Sized) for rate on workers off prism.
func sized(rate, workers int) pipeline.Options {
	o := pipeline.Defaults()
	o.DesignRate = rate
	return o.Sized("flink", workers)
}

// workersFor plans the workers for rate over the launcher's shards: enough vCPUs for the rate, and
// enough workers that the launcher's --dedup-cache for that count (pipeline.Options.Sized: the ids
// of the shards one worker owns at transforms.DedupCacheBytesPerID) fits under the cap the workers
// put on their cache (transforms.DedupCacheCeiling of the memory limit they apply), so that every
// worker caches every shard it owns (an uncached shard reloads its key for every batch). It
// returns that count, its cache and the cap; ok is false when not even a worker of one shard can
// cache it.
func workersFor(o options, rate int) (workers int, cache, ceiling int64, ok bool) {
	shards := sized(rate, 0).DedupShards
	ceiling = transforms.DedupCacheCeiling(transforms.MemoryLimitFor(o.memoryBytes()))
	cacheFor := func(w int) int64 { return int64(sized(rate, w).DedupCacheBytes) }
	least := max(1, int(math.Ceil(float64(rate)/(float64(o.vcpus)*o.vcpuRate))))
	// The cache falls as the workers grow, down to one shard a worker at shards workers.
	workers = least + sort.Search(max(shards-least, 0), func(i int) bool { return cacheFor(least+i) <= ceiling })
	cache = cacheFor(workers)
	return workers, cache, ceiling, cache <= ceiling
}

func (o options) memoryBytes() int64 { return int64(o.memGiB * (1 << 30)) }
