package main

import (
	"fmt"
	"testing"

	"github.com/revenue-stream/hourly/transforms"
)

// The plan's workers cache every shard they own, by the rules the workers and the launcher apply:
// the launcher's --dedup-cache for the planned count holds the ids of the shards the busiest worker
// owns at transforms.DedupCacheBytesPerID, and never exceeds the cap the workers put on the cache
// under their memory limit; one worker fewer (when the vCPUs allow it) would not fit.
func TestScalePlannedCacheFitsTheWorker(t *testing.T) {
	for _, memGiB := range []float64{4, 8, 16, 32, 36, 64, 128} {
		for _, rate := range []int{1_000, 20_000, 50_000, 100_000, 1_000_000} {
			t.Run(fmt.Sprintf("%vGiB/%d", memGiB, rate), func(t *testing.T) {
				o := defaults()
				o.memGiB = memGiB
				shards := sized(rate, 0).DedupShards
				workers, cache, ceiling, _ := workersFor(o, rate)
				if want := transforms.DedupCacheCeiling(transforms.MemoryLimitFor(int64(memGiB * (1 << 30)))); ceiling != want {
					t.Fatalf("cap %d, want the workers' %d", ceiling, want)
				}
				if launcher := int64(sized(rate, workers).DedupCacheBytes); cache != launcher {
					t.Fatalf("cache %d, want the launcher's default for %d workers, %d", cache, workers, launcher)
				}
				owned := (shards + workers - 1) / workers
				kept := retention + policy.Window + bound // as the launcher sizes the cache for
				ids := float64(rate) * kept.Seconds() / float64(shards) * float64(owned)
				if cache > ceiling || float64(cache) < ids*transforms.DedupCacheBytesPerID {
					t.Fatalf("%d workers of %d shards each: --dedup-cache %.2f GiB, cap %.2f GiB, the shards' ids need %.2f GiB",
						workers, owned, float64(cache)/(1<<30), float64(ceiling)/(1<<30), ids*transforms.DedupCacheBytesPerID/(1<<30))
				}
				least := (rate + o.vcpus*int(o.vcpuRate) - 1) / (o.vcpus * int(o.vcpuRate))
				if fewer := workers - 1; fewer >= max(least, 1) && int64(sized(rate, fewer).DedupCacheBytes) <= ceiling {
					t.Fatalf("%d workers planned, %d fit", workers, fewer)
				}
			})
		}
	}
}
