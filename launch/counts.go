package launch

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/sinks"
	"github.com/revenue-stream/hourly/transforms"
)

// Counts are a run's figures, from the job's counters in the revenue
// namespace, summed across steps (too_late, say, is counted by two gates).
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
	// Rows counts the snapshot rows the pipeline emitted, by result state.
	Rows map[string]int64 `json:"rows_by_state"`
	// AfterFinal counts events that reached a window after its FINAL row:
	// an invariant that must stay zero.
	AfterFinal int64 `json:"invariant_data_after_final"`
	// What the sink made of the rows and audit records (sinks.Write).
	SinkAccepted int64 `json:"sink_rows_accepted"`
	SinkStale    int64 `json:"sink_rows_stale"`
	SinkAudit    int64 `json:"sink_audit_inserted"`
	SinkRetries  int64 `json:"sink_retries"`
}

// counter is one user counter's value, summed across steps.
type counter struct {
	namespace, name string
	value           int64
}

// countersOf lists a job's counters. Result() is the committed value where
// the runner reports one, else the attempted value.
func countersOf(m metrics.Results) []counter {
	var out []counter
	for _, r := range m.AllMetrics().Counters() {
		out = append(out, counter{namespace: r.Namespace(), name: r.Name(), value: r.Result()})
	}
	return out
}

// countsOf sums the counters of the revenue namespace by name.
func countsOf(counters []counter) Counts {
	c := Counts{QuarantinedBy: map[string]int64{}, ReadBy: map[string]int64{}, Rows: map[string]int64{}}
	for _, r := range counters {
		if r.namespace != transforms.Namespace {
			continue
		}
		v := r.value
		switch name := r.name; {
		case name == "read":
			c.Read += v
		case name == "counted":
			c.Counted += v
		case name == "duplicates":
			c.Duplicates += v
		case name == "conflicts":
			c.Conflicts += v
		case name == "quarantined":
			c.Quarantined += v
		case name == "too_late":
			c.TooLate += v
		case name == "invariant_data_after_final":
			c.AfterFinal += v
		case name == sinks.MetricRowsAccepted:
			c.SinkAccepted += v
		case name == sinks.MetricRowsStale:
			c.SinkStale += v
		case name == sinks.MetricAuditInserted:
			c.SinkAudit += v
		case name == sinks.MetricRetries:
			c.SinkRetries += v
		case strings.HasPrefix(name, "quarantined_"):
			c.QuarantinedBy[strings.TrimPrefix(name, "quarantined_")] += v
		case strings.HasPrefix(name, "read_partition_"):
			c.ReadBy[strings.TrimPrefix(name, "read_partition_")] += v
		case strings.HasPrefix(name, "rows_"):
			c.Rows[strings.TrimPrefix(name, "rows_")] += v
		}
	}
	return c
}

// Verdicts is the right-hand side of the conservation identity.
func (c Counts) Verdicts() int64 {
	return c.Counted + c.Duplicates + c.Conflicts + c.Quarantined + c.TooLate
}

// Check verifies SPEC §4's conservation identity, read = counted +
// duplicates + conflicts + quarantined + too_late, and that no event reached
// a window after its FINAL row.
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

// diffCounts lists the figures in which two Counts differ.
func diffCounts(a, b Counts) []string {
	var d []string
	cmp := func(name string, x, y int64) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %d vs %d", name, x, y))
		}
	}
	cmp("read", a.Read, b.Read)
	cmp("counted", a.Counted, b.Counted)
	cmp("duplicates", a.Duplicates, b.Duplicates)
	cmp("conflicts", a.Conflicts, b.Conflicts)
	cmp("quarantined", a.Quarantined, b.Quarantined)
	cmp("too_late", a.TooLate, b.TooLate)
	cmp("invariant_data_after_final", a.AfterFinal, b.AfterFinal)
	cmp("sink_rows_accepted", a.SinkAccepted, b.SinkAccepted)
	cmp("sink_rows_stale", a.SinkStale, b.SinkStale)
	cmp("sink_audit_inserted", a.SinkAudit, b.SinkAudit)
	cmp("sink_retries", a.SinkRetries, b.SinkRetries)
	for _, m := range []struct {
		prefix string
		x, y   map[string]int64
	}{{"quarantined_", a.QuarantinedBy, b.QuarantinedBy}, {"read_partition_", a.ReadBy, b.ReadBy}, {"rows_", a.Rows, b.Rows}} {
		keys := map[string]bool{}
		for k := range m.x {
			keys[k] = true
		}
		for k := range m.y {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			cmp(m.prefix+k, m.x[k], m.y[k])
		}
	}
	return d
}
