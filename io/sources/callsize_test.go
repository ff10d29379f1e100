package sources

import "testing"

// A reader call grows with the dedup shards, about 12 records a shard,
// between DefaultMaxPerCall and 25,000.
func TestCallSizeFor(t *testing.T) {
	for _, c := range []struct{ shards, want int }{
		{0, DefaultMaxPerCall}, {8, DefaultMaxPerCall}, {416, DefaultMaxPerCall},
		{512, 6144}, {2048, 24576}, {16384, 25000},
	} {
		if got := CallSizeFor(c.shards); got != c.want {
			t.Errorf("CallSizeFor(%d) = %d, want %d", c.shards, got, c.want)
		}
	}
}
