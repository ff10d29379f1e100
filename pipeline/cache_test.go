package pipeline

import (
	"testing"
	"time"

	"github.com/revenue-stream/hourly/transforms"
)

// TestDedupCacheFor (dedupCacheFor, which Options.Sized applies): the --dedup-cache a worker gets is what the shards it
// owns hold, as docs/capacity.md's cache rule states it (24 GiB for 4
// workers at 20,000 ev/s, and for 20 at 100,000): 512 shards of 920,000
// ids (26h10m at 9.77 ev/s) at 52.5 bytes, 23.03 GiB, rounded up. Both are
// above a 32 GiB worker's 23 GiB cap, so the plan takes 5 and 21 workers.
func TestDedupCacheFor(t *testing.T) {
	const gib = 1 << 30
	retention, window := 25*time.Hour, time.Hour
	kept := retention + window + 10*time.Minute
	for _, c := range []struct {
		name          string
		runner        string
		rate, workers int
		want          int
	}{
		{"20,000 ev/s on 4 workers", "dataflow", 20_000, 4, 24 * gib},
		{"100,000 ev/s on 20 workers", "flink", 100_000, 20, 24 * gib},
		// Twice the workers, about half the shards each.
		{"20,000 ev/s on 8 workers", "flink", 20_000, 8, 12 * gib},
		// Negative control: no worker count, one worker may own every
		// shard (its memory limit caps the cache on the worker).
		{"20,000 ev/s, workers unknown", "flink", 20_000, 0, 93 * gib},
		{"a low design rate keeps the prism default", "dataflow", 100, 4, transforms.DefaultDedupCacheBytes},
		{"prism keeps its default", "prism", 20_000, 4, transforms.DefaultDedupCacheBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			shards := shardsFor(c.runner, c.rate, retention, window)
			if got := dedupCacheFor(c.runner, c.rate, shards, c.workers, kept); got != c.want {
				t.Fatalf("dedupCacheFor(%s, %d ev/s, %d shards, %d workers) = %.2f GiB, want %.2f GiB",
					c.runner, c.rate, shards, c.workers, float64(got)/gib, float64(c.want)/gib)
			}
		})
	}
}
