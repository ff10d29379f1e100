package delay_test

import (
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/model"
)

const (
	minute = int64(60_000)
	hour   = 60 * minute
)

func TestIndex(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want int
	}{
		{-5, 0}, {0, 0}, {minute - 1, 0}, {minute, 1}, {5*minute - 1, 1}, {5 * minute, 2}, {30 * minute, 4},
		{hour, 5}, {24*hour - 1, 6}, {24 * hour, 7}, {1 << 62, 7},
	} {
		if got := delay.Index(c.ms); got != c.want {
			t.Errorf("Index(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
}

func TestLatenessAndArrival(t *testing.T) {
	bound := 10 * time.Minute
	// The partition had shown 11:20 (watermark 11:10): an event at 10:50 is
	// 30 minutes late; one at 11:25 moved it forward.
	wm := 11*hour + 10*minute
	if got := delay.Lateness(10*hour+50*minute, wm, bound); got != 30*minute {
		t.Errorf("Lateness = %d, want %d", got, 30*minute)
	}
	if got := delay.Lateness(11*hour+25*minute, wm, bound); got != 0 {
		t.Errorf("Lateness of an event moving forward = %d, want 0", got)
	}
	if got := delay.Lateness(5, model.NoWatermark, bound); got != 0 {
		t.Errorf("Lateness of a first event = %d, want 0", got)
	}
	if got := delay.Arrival(10*hour, 10*hour+90_000); got != 90_000 {
		t.Errorf("Arrival = %d, want 90000", got)
	}
	if got := delay.Arrival(10*hour+1, 10*hour); got != 0 {
		t.Errorf("Arrival of an event ahead of the clock = %d, want 0", got)
	}
}

// The percentile is the upper bound of the bucket holding the nearest-rank
// value: rank ceil(n * p / 100).
func TestPercentile(t *testing.T) {
	U := delay.Unbounded
	for _, c := range []struct {
		counts        []int64
		p50, p95, p99 int64
	}{
		// 20 values: ranks 10, 19, 20.
		{[]int64{12, 1, 1, 1, 1, 1, 2, 1}, minute, 24 * hour, U},
		// 8 values: ranks 4, 8, 8 (SPEC §7's minimal sequence).
		{[]int64{4, 0, 1, 0, 1, 1, 0, 1}, minute, U, U},
		// 100 values: ranks 50, 95, 99 fall exactly on bucket edges.
		{[]int64{50, 45, 4, 1}, minute, 5 * minute, 10 * minute},
		// 101 values: ranks 51, 96, 100 go one further.
		{[]int64{50, 45, 4, 1, 1}, 5 * minute, 10 * minute, 30 * minute},
		{[]int64{0, 0, 0, 0, 0, 0, 0, 3}, U, U, U},
		{[]int64{1}, minute, minute, minute},
	} {
		h := delay.NewHistogram(c.counts)
		if got, want := [3]int64{h.P50, h.P95, h.P99}, [3]int64{c.p50, c.p95, c.p99}; got != want {
			t.Errorf("NewHistogram(%v) p50/p95/p99 = %v, want %v", c.counts, got, want)
		}
	}
	if h := delay.NewHistogram([]int64{0, 0}); h.P50 != 0 || h.P95 != 0 || h.P99 != 0 {
		t.Errorf("percentiles of nothing: %+v, want 0", h)
	}
}

func TestHistogram(t *testing.T) {
	h := delay.NewHistogram([]int64{4, 0, 1, 0, 1, 1, 0, 1})
	if h.Total != 8 || h.P50 != minute || h.P95 != delay.Unbounded || h.P99 != delay.Unbounded {
		t.Errorf("histogram %+v: want total 8, p50 1m, p95 and p99 unbounded", h)
	}
	if got, want := h.Percentiles(), "p50 <1m, p95 >=24h, p99 >=24h"; got != want {
		t.Errorf("Percentiles() = %q, want %q", got, want)
	}
	if !slices.Equal(h.Counts(), []int64{4, 0, 1, 0, 1, 1, 0, 1}) {
		t.Errorf("Counts() = %v", h.Counts())
	}
	if e := delay.NewHistogram(nil); e.Total != 0 || len(e.Buckets) != len(delay.Buckets) || e.Percentiles() != "none" {
		t.Errorf("empty histogram %+v", e)
	}
}

func TestNames(t *testing.T) {
	var labels, names []string
	for i := range delay.Buckets {
		labels = append(labels, delay.Label(i))
		names = append(names, delay.CounterName("arrival_delay", i))
	}
	wantLabels := []string{"<1m", "1-5m", "5-10m", "10-30m", "30m-1h", "1-6h", "6-24h", ">24h"}
	wantNames := []string{"arrival_delay_0_1m", "arrival_delay_1m_5m", "arrival_delay_5m_10m", "arrival_delay_10m_30m",
		"arrival_delay_30m_1h", "arrival_delay_1h_6h", "arrival_delay_6h_24h", "arrival_delay_24h_inf"}
	if !slices.Equal(labels, wantLabels) {
		t.Errorf("labels %q, want %q", labels, wantLabels)
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("counter names %q, want %q", names, wantNames)
	}
}
