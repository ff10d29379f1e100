package pipeline

import (
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/transforms"
)

// Counts are the conservation figures of SPEC §4 for one run, and what the
// sink made of its rows (cmd/launch fills the Sink fields from sinks.Write's
// counters).
type Counts struct {
	Read        int64 `json:"read"`
	Counted     int64 `json:"counted"`
	Duplicates  int64 `json:"duplicates"`
	Conflicts   int64 `json:"conflicts"`
	Quarantined int64 `json:"quarantined"`
	TooLate     int64 `json:"too_late"`
	// QuarantinedBy splits Quarantined by reason.
	QuarantinedBy map[string]int64 `json:"quarantined_by_reason"`
	// ReadBy splits Read by source partition.
	ReadBy map[string]int64 `json:"read_by_partition"`
	// Rows counts snapshot rows by result state (EARLY, ON_TIME, LATE, FINAL).
	Rows map[string]int64 `json:"rows_by_state"`
	// AfterFinal counts events that reached a window after its FINAL row;
	// it must stay zero.
	AfterFinal int64 `json:"invariant_data_after_final"`
	// Lateness and Arrival are the valid events' delays, from their bucket
	// counters (transforms.MetricLateness, transforms.MetricArrival), with
	// p50, p95 and p99.
	Lateness delay.Histogram `json:"event_lateness"`
	Arrival  delay.Histogram `json:"arrival_delay"`
	// What the sink made of the rows and audit records.
	SinkAccepted int64 `json:"sink_rows_accepted"`
	SinkStale    int64 `json:"sink_rows_stale"`
	SinkAudit    int64 `json:"sink_audit_inserted"`
	SinkRetries  int64 `json:"sink_retries"`
	// Counters holds every counter of the revenue namespace by name.
	Counters map[string]int64 `json:"-"`
}

// Verdicts is the right-hand side of the conservation identity.
func (c Counts) Verdicts() int64 {
	return c.Counted + c.Duplicates + c.Conflicts + c.Quarantined + c.TooLate
}

// Check verifies read = counted + duplicates + conflicts + quarantined +
// too_late, and that no event reached a window after its FINAL row.
func (c Counts) Check() error {
	if c.Read != c.Verdicts() {
		return fmt.Errorf("conservation violated: read %d != counted %d + duplicates %d + conflicts %d + quarantined %d + too_late %d (= %d)",
			c.Read, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate, c.Verdicts())
	}
	if c.AfterFinal != 0 {
		return fmt.Errorf("%d events reached a window after its FINAL row (invariant_data_after_final)", c.AfterFinal)
	}
	return nil
}

// Identity renders the conservation identity with this run's figures.
func (c Counts) Identity() string {
	op := "="
	if c.Read != c.Verdicts() {
		op = "!="
	}
	return fmt.Sprintf("read %d %s counted %d + duplicates %d + conflicts %d + quarantined %d + too_late %d",
		c.Read, op, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate)
}

// String renders the identity as one line.
func (c Counts) String() string { return c.Identity() }

// CountsFrom sums the pipeline's counters (committed values where the runner
// reports them, attempted otherwise) across steps.
func CountsFrom(pr beam.PipelineResult) Counts {
	named := map[string]int64{}
	if pr != nil {
		for _, r := range pr.Metrics().AllMetrics().Counters() {
			if r.Namespace() == transforms.Namespace {
				named[r.Name()] += r.Result()
			}
		}
	}
	return CountsOf(named)
}

// CountsOf reads the figures from the revenue namespace's counters, summed
// by name.
func CountsOf(named map[string]int64) Counts {
	c := Counts{QuarantinedBy: map[string]int64{}, ReadBy: map[string]int64{}, Rows: map[string]int64{}, Counters: named}
	lateness := make([]int64, len(delay.Buckets))
	arrival := make([]int64, len(delay.Buckets))
	for name, v := range named {
		if b, ok := delayCounters[name]; ok {
			if b.arrival {
				arrival[b.index] += v
			} else {
				lateness[b.index] += v
			}
			continue
		}
		switch {
		case name == "read":
			c.Read = v
		case name == "counted":
			c.Counted = v
		case name == "duplicates":
			c.Duplicates = v
		case name == "conflicts":
			c.Conflicts = v
		case name == "quarantined":
			c.Quarantined = v
		case name == "too_late":
			c.TooLate = v
		case name == "invariant_data_after_final":
			c.AfterFinal = v
		case strings.HasPrefix(name, "quarantined_"):
			c.QuarantinedBy[strings.TrimPrefix(name, "quarantined_")] = v
		case strings.HasPrefix(name, "read_partition_"):
			c.ReadBy[strings.TrimPrefix(name, "read_partition_")] = v
		case strings.HasPrefix(name, "rows_"):
			c.Rows[strings.TrimPrefix(name, "rows_")] = v
		}
	}
	c.Lateness, c.Arrival = delay.NewHistogram(lateness), delay.NewHistogram(arrival)
	return c
}

// delayCounters maps the delay bucket counters' names to their buckets.
var delayCounters = func() map[string]delayBucket {
	m := map[string]delayBucket{}
	for i := range delay.Buckets {
		m[delay.CounterName(transforms.MetricLateness, i)] = delayBucket{index: i}
		m[delay.CounterName(transforms.MetricArrival, i)] = delayBucket{index: i, arrival: true}
	}
	return m
}()

type delayBucket struct {
	index   int
	arrival bool
}
