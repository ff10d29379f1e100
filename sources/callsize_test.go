package sources

import "testing"

// A reader call grows with the dedup shards, about 24 records a shard,
// between DefaultMaxPerCall and 50,000.
func TestCallSizeFor(t *testing.T) {
	for _, c := range []struct{ shards, want int }{
		{0, DefaultMaxPerCall}, {8, DefaultMaxPerCall}, {208, DefaultMaxPerCall},
		{256, 6144}, {2048, 49152}, {16384, 50000},
	} {
		if got := CallSizeFor(c.shards); got != c.want {
			t.Errorf("CallSizeFor(%d) = %d, want %d", c.shards, got, c.want)
		}
	}
}
