package transforms

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

const gib = int64(1) << 30

// The rule of docs/capacity.md: a 32 GiB worker runs its SDK harness under
// a 24 GiB limit, and the cache under 23 GiB of it.
func TestMemoryLimitRule(t *testing.T) {
	for _, c := range []struct {
		name            string
		env             string
		current, memory int64
		want            int64
		set             bool
	}{
		{"32 GiB worker, nothing set", "", math.MaxInt64, 32 * gib, 24 * gib, true},
		{"16 GiB worker", "", math.MaxInt64, 16 * gib, 12 * gib, true},
		{"GOMEMLIMIT in the environment wins", "20GiB", 20 * gib, 32 * gib, 20 * gib, false},
		{"GOMEMLIMIT=off wins too", "off", math.MaxInt64, 32 * gib, math.MaxInt64, false},
		{"a limit set in the process is left alone", "", 10 * gib, 32 * gib, 10 * gib, false},
		{"memory unknown: nothing set", "", math.MaxInt64, 0, math.MaxInt64, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			limit, set := decideMemoryLimit(c.env, c.current, c.memory)
			if limit != c.want || set != c.set {
				t.Fatalf("decideMemoryLimit(%q, %d, %d) = %d, %v; want %d, %v", c.env, c.current, c.memory, limit, set, c.want, c.set)
			}
		})
	}
	if got := DedupCacheCeiling(24 * gib); got != 23*gib {
		t.Fatalf("cache ceiling under 24 GiB = %d, want 23 GiB", got)
	}
	if got := DedupCacheCeiling(2 * gib); got != 3*gib/2 {
		t.Fatalf("cache ceiling under 2 GiB = %d, want 1.5 GiB", got)
	}
}

func TestWorkerMemoryFromCgroupAndMeminfo(t *testing.T) {
	const meminfo = "MemTotal:       33554432 kB\nMemFree:        1000 kB\n"
	for _, c := range []struct {
		name        string
		meminfo, v2 string
		v1          string
		want        int64
	}{
		{"machine only", meminfo, "", "", 32 * gib},
		{"cgroup v2 limit below the machine", meminfo, "17179869184\n", "", 16 * gib},
		{"cgroup v2 without a limit", meminfo, "max\n", "", 32 * gib},
		{"cgroup v1 without a limit (a huge figure)", meminfo, "", "9223372036854771712\n", 32 * gib},
		{"cgroup v1 limit", meminfo, "", "8589934592", 8 * gib},
		{"nothing readable", "", "", "", 0},
	} {
		if got := memoryOf(c.meminfo, c.v2, c.v1); got != c.want {
			t.Errorf("%s: memoryOf = %d, want %d", c.name, got, c.want)
		}
	}
}

// The ceiling a memory limit sets holds whatever a later Setup asks of the
// bound (every DoFn instance's Setup calls setLimit with the flag), and
// entries above it go.
func TestShardCacheCeiling(t *testing.T) {
	c := newShardCacheT()
	c.now = func() time.Time { return time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC) }
	p := triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour}
	st := func() *shardState {
		s := fresh()
		for i := range 1000 {
			s.Judge(&model.Event{EventID: fmt.Sprint(i), EventTime: at("2026-11-04T10:00:00Z")}, p)
		}
		return s
	}
	one := shardBytes(st())
	c.setLimit(10 * one)
	if _, got := c.setCeiling(2*one + one/2); got != 2*one+one/2 {
		t.Fatalf("bound under the ceiling = %d, want %d", got, 2*one+one/2)
	}
	c.setLimit(10 * one) // a later Setup
	evicted := 0
	for i := range 4 {
		evicted += c.put(cacheKey{"p", i}, 1, st())
	}
	if n, _ := c.size(); n != 2 || evicted != 2 {
		t.Fatalf("under a ceiling of 2.5 shards: %d cached, %d evicted; want 2 and 2", n, evicted)
	}
	// Negative control: without the ceiling the same puts all stay.
	c.setCeiling(0)
	for i := range 4 {
		c.put(cacheKey{"p", i}, 1, st())
	}
	if n, _ := c.size(); n != 4 {
		t.Fatalf("without a ceiling: %d cached, want 4", n)
	}
}

// DedupCacheBytesPerID bounds what the id table costs per id at every size
// (the figure the launcher sizes the cache with).
func TestDedupCacheBytesPerIDBoundsTheTable(t *testing.T) {
	if DedupCacheBytesPerID != 52.5 {
		t.Fatalf("DedupCacheBytesPerID = %v, want 52.5 (28 B a slot at 53 %% full)", DedupCacheBytesPerID)
	}
	tb := newIDTable(0)
	for i := range 300_000 {
		tb.put(hashID(fmt.Sprint(i)), 1, 0)
		if n := i + 1; n >= 2000 && float64(tb.bytes())/float64(n) > DedupCacheBytesPerID+0.5 {
			t.Fatalf("%d ids cost %d bytes: %.1f a id, above %v", n, tb.bytes(), float64(tb.bytes())/float64(n), DedupCacheBytesPerID)
		}
	}
}
