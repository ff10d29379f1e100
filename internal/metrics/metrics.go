// Package metrics owns the "revenue" namespace: every metric's name, and the
// one reader of a runner's results into a run's Counts.
package metrics

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/slicesx"
)

// Namespace holds every metric of the streaming pipeline.
const Namespace = "revenue"

// Name is the name of one metric in Namespace.
type Name string

// The conservation counters of SPEC §4: Read = Counted + Duplicates +
// Conflicts + Quarantined + TooLate.
const (
	Read        Name = "read"
	Counted     Name = "counted"
	Duplicates  Name = "duplicates"
	Conflicts   Name = "conflicts"
	Quarantined Name = "quarantined"
	TooLate     Name = "too_late"
)

// The other counters and distributions.
const (
	// AfterFinal counts events that reached a window after its FINAL row (must be 0).
	AfterFinal        Name = "invariant_data_after_final"
	ReplayedIntoFinal Name = "replayed_into_final"
	DedupExpired      Name = "dedup_expired"
	DedupStateReloads Name = "dedup_state_reloads"
	DedupStateEntries Name = "dedup_state_entries" // distribution
	// DedupElements counts the batches the dedup step took in (docs/capacity.md).
	DedupElements Name = "dedup_elements"
	// WindowFanOuts counts window announcements (transforms.AnnounceWindows).
	WindowFanOuts        Name = "dedup_window_fanouts"
	PartitionsDiscovered Name = "partitions_discovered" // folders found after the start
	// StoppedCalls counts a following folder reader's calls after it saw the graceful stop: each
	// reads its current file to the end at most, and no other file.
	StoppedCalls           Name = "source_stopped_calls"
	DedupCacheEvictions    Name = "dedup_cache_evictions"
	RevisionMarkersExpired Name = "revision_markers_expired"
	// RevisionSeedRows counts the sink rows the revision step loaded at start.
	RevisionSeedRows Name = "revision_seed_rows"
	// RevisionsAdopted counts keys continued after a newer sink row.
	RevisionsAdopted Name = "revisions_adopted_from_sink"

	// What the sink made of the rows and audit records.
	SinkRowsAccepted  Name = "sink_rows_accepted"
	SinkRowsStale     Name = "sink_rows_stale"
	SinkAuditInserted Name = "sink_audit_inserted"
	SinkRetries       Name = "sink_retries"
	// SinkAppendRequests counts BigQuery Storage Write API append requests (a
	// lower bound on prism, which sometimes drops a timer bundle's counters).
	SinkAppendRequests Name = "sink_append_requests"

	// The delay metrics of every valid event: a distribution in ms (Ms) and
	// one counter per delay.Buckets bucket (Bucket). Lateness is how far
	// behind its partition's largest event time so far an event arrived.
	Lateness Name = "event_lateness"
	// Arrival is the read processing time minus the event time.
	Arrival Name = "arrival_delay"
)

// The Pub/Sub source's figures ("read" is counted by validation).
const (
	PubsubPulled         Name = "pubsub_pulled"
	PubsubAcked          Name = "pubsub_acked"
	PubsubAckErrors      Name = "pubsub_ack_errors"
	PubsubBlank          Name = "pubsub_blank"
	PubsubReplayed       Name = "pubsub_replayed"
	PubsubObjects        Name = "pubsub_objects"
	PubsubArchiveBytes   Name = "pubsub_archive_bytes"
	PubsubArchiveRetries Name = "pubsub_archive_retries"
	// PubsubHeldExtended counts ack deadlines extended while archiving.
	PubsubHeldExtended Name = "pubsub_held_extended"
	PubsubHeldPeak     Name = "pubsub_held_peak" // gauge
)

// PubsubStalled is the gauge of how long (ms) a Pub/Sub partition has held
// messages without emitting any, past --pubsub-stall-after; else 0.
func PubsubStalled(partition string) Name { return Name("pubsub_stalled_ms_" + partition) }

// ReadBy counts the records read from a source partition.
func ReadBy(partition string) Name { return Name("read_partition_" + partition) }

// QuarantinedBy counts the records quarantined for a reason.
func QuarantinedBy(reason string) Name { return Name("quarantined_" + reason) }

// RowsBy counts the snapshot rows of a result state (EARLY, ON_TIME, ...).
func RowsBy(state string) Name { return Name("rows_" + state) }

// RowRevenueBy is the distribution of the revenue of a state's rows.
func RowRevenueBy(state string) Name { return Name("row_revenue_micros_" + state) }

// PartitionIdle is a gauge: 1 while a source partition is idle, else 0.
func PartitionIdle(partition string) Name { return Name("partition_idle_" + partition) }

// IdleTransitions counts a source partition's moves to idle.
func IdleTransitions(partition string) Name { return Name("idle_transitions_" + partition) }

// WatermarkLag is the gauge of how far (ms) a partition's watermark trails
// processing time.
func WatermarkLag(partition string) Name { return Name("watermark_lag_ms_" + partition) }

// Of is the partition, reason or state a name of family (ReadBy, ...) is for;
// ok is false for another family's name.
func Of(family func(string) Name, name string) (string, bool) {
	return strings.CutPrefix(name, string(family("")))
}

// Bucket is the counter of bucket i (of delay.Buckets) of a delay metric.
func Bucket(m Name, i int) Name { return Name(delay.CounterName(string(m), i)) }

// Ms is the distribution, in ms, of a delay metric.
func Ms(m Name) Name { return m + "_ms" }

// Counter, Distribution and Gauge are metric n in Namespace.
func Counter(n Name) beam.Counter { return beam.NewCounter(Namespace, string(n)) }

func Distribution(n Name) beam.Distribution { return beam.NewDistribution(Namespace, string(n)) }

func Gauge(n Name) beam.Gauge { return beam.NewGauge(Namespace, string(n)) }

// Counts are a run's conservation figures (SPEC §4) and its sink's.
type Counts struct {
	Read          int64            `json:"read"`
	Counted       int64            `json:"counted"`
	Duplicates    int64            `json:"duplicates"`
	Conflicts     int64            `json:"conflicts"`
	Quarantined   int64            `json:"quarantined"`
	TooLate       int64            `json:"too_late"`
	QuarantinedBy map[string]int64 `json:"quarantined_by_reason"`
	ReadBy        map[string]int64 `json:"read_by_partition"`
	// Rows counts snapshot rows by result state.
	Rows       map[string]int64 `json:"rows_by_state"`
	AfterFinal int64            `json:"invariant_data_after_final"`
	// ReplayedIntoFinal counts the counted events of windows the sink
	// already held as FINAL (a restart's replay): their FINAL rows stay.
	ReplayedIntoFinal int64 `json:"replayed_into_final"`
	DedupElements     int64 `json:"dedup_elements"`
	// Lateness and Arrival are read from the delay bucket counters.
	Lateness     delay.Histogram `json:"event_lateness"`
	Arrival      delay.Histogram `json:"arrival_delay"`
	SinkAccepted int64           `json:"sink_rows_accepted"`
	SinkStale    int64           `json:"sink_rows_stale"`
	SinkAudit    int64           `json:"sink_audit_inserted"`
	SinkRetries  int64           `json:"sink_retries"`
	// Counters holds every counter of the revenue namespace by name.
	Counters map[string]int64 `json:"-"`
}

// Term is one named figure of the conservation identity.
type Term struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Terms are the identity's right-hand side in SPEC order, named as their counters.
func (c Counts) Terms() []Term {
	return []Term{{string(Counted), c.Counted}, {string(Duplicates), c.Duplicates}, {string(Conflicts), c.Conflicts},
		{string(Quarantined), c.Quarantined}, {string(TooLate), c.TooLate}}
}

// Verdicts is the sum of Terms.
func (c Counts) Verdicts() int64 {
	var n int64
	for _, t := range c.Terms() {
		n += t.Value
	}
	return n
}

// Conserved reports whether read = counted + duplicates + conflicts + quarantined + too_late.
func (c Counts) Conserved() bool { return c.Read == c.Verdicts() }

// Check verifies the identity (Conserved), and that no event reached a window after its FINAL row.
func (c Counts) Check() error {
	if !c.Conserved() {
		return fmt.Errorf("conservation violated: %s (= %d)", c.Identity(), c.Verdicts())
	}
	if c.AfterFinal != 0 {
		return fmt.Errorf("%d events reached a window after its FINAL row (%s)", c.AfterFinal, AfterFinal)
	}
	return nil
}

// Identity renders the conservation identity with this run's figures.
func (c Counts) Identity() string {
	op := "="
	if !c.Conserved() {
		op = "!="
	}
	terms := slicesx.Map(c.Terms(), func(t Term) string { return fmt.Sprintf("%s %d", t.Name, t.Value) })
	return fmt.Sprintf("read %d %s %s", c.Read, op, strings.Join(terms, " + "))
}

// Delay is one delay metric's histogram, with its name as people read it.
type Delay struct {
	Metric Name
	Label  string
	delay.Histogram
}

// Delays are the delay metrics' histograms: event lateness, then arrival delay.
func (c Counts) Delays() []Delay {
	return []Delay{{Lateness, "event lateness", c.Lateness}, {Arrival, "arrival delay", c.Arrival}}
}

// DedupElementsPerThousand is the dedup elements per 1,000 records read.
func (c Counts) DedupElementsPerThousand() float64 {
	if c.Read == 0 {
		return 0
	}
	return float64(c.DedupElements) * 1000 / float64(c.Read)
}

// String renders the identity as one line.
func (c Counts) String() string { return c.Identity() }

// Committed reads a job's Counts from its revenue counters (Named).
func Committed(m beammetrics.Results) (c Counts, committed, reported bool) {
	named, committed, reported := Named(m, Namespace)
	return CountsOf(named), committed, reported
}

// OfJob returns a finished job's metrics; false, with warning logged, when the runner could
// not fetch them (its Metrics() panics then).
func OfJob(pr beam.PipelineResult, warning string) (m beammetrics.Results, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			slog.Warn(warning, "panic", p)
			ok = false
		}
	}()
	return pr.Metrics(), true
}

// Named reads a job's counters in namespace, summed by name: committed values when the runner
// reports any, else attempted (committed says which; reported, whether any came). Not Result(),
// which picks per counter and would mix in-flight and committed values.
func Named(m beammetrics.Results, namespace string) (named map[string]int64, committed, reported bool) {
	all := m.AllMetrics().Counters()
	committed = slices.ContainsFunc(all, func(r beammetrics.CounterResult) bool { return r.Committed != 0 })
	named = map[string]int64{}
	for _, r := range all {
		if r.Namespace() != namespace {
			continue
		}
		if committed {
			named[r.Name()] += r.Committed
		} else {
			named[r.Name()] += r.Attempted
		}
	}
	return named, committed, len(all) > 0
}

// DistributionSum is a Beam distribution's value, summed across steps.
type DistributionSum struct {
	Count, Sum, Min, Max int64
}

// Distributions reads a job's distributions in namespace, each summed by name across steps.
func Distributions(m beammetrics.Results, namespace string) map[string]DistributionSum {
	sums := map[string]DistributionSum{}
	for _, r := range m.AllMetrics().Distributions() {
		if r.Namespace() != namespace {
			continue
		}
		d, v := sums[r.Name()], r.Result()
		switch {
		case v.Count == 0: // an empty step's value changes nothing
		case d.Count == 0:
			d = DistributionSum(v)
		default:
			d = DistributionSum{d.Count + v.Count, d.Sum + v.Sum, min(d.Min, v.Min), max(d.Max, v.Max)}
		}
		sums[r.Name()] = d
	}
	return sums
}

// CountsOf reads Counts from the revenue counters, summed by name.
func CountsOf(named map[string]int64) Counts {
	c := Counts{QuarantinedBy: map[string]int64{}, ReadBy: map[string]int64{}, Rows: map[string]int64{}, Counters: named}
	fixed := map[Name]*int64{
		Read: &c.Read, Counted: &c.Counted, Duplicates: &c.Duplicates, Conflicts: &c.Conflicts,
		Quarantined: &c.Quarantined, TooLate: &c.TooLate, AfterFinal: &c.AfterFinal, ReplayedIntoFinal: &c.ReplayedIntoFinal, DedupElements: &c.DedupElements,
		SinkRowsAccepted: &c.SinkAccepted, SinkRowsStale: &c.SinkStale, SinkAuditInserted: &c.SinkAudit, SinkRetries: &c.SinkRetries,
	}
	byFamily := []map[string]int64{c.ReadBy, c.QuarantinedBy, c.Rows}
	for name, v := range named {
		if p, ok := fixed[Name(name)]; ok {
			*p = v
			continue
		}
		for i, f := range families {
			if rest, ok := Of(f, name); ok {
				byFamily[i][rest] = v
			}
		}
	}
	c.Lateness, c.Arrival = delay.NewHistogram(bucketCounts(named, Lateness)), delay.NewHistogram(bucketCounts(named, Arrival))
	return c
}

// bucketCounts reads the bucket counters of the delay metric m.
func bucketCounts(named map[string]int64, m Name) []int64 {
	counts := make([]int64, len(delay.Buckets))
	for i := range counts {
		counts[i] = named[string(Bucket(m, i))]
	}
	return counts
}

// families are the counter families CountsOf files in a map of Counts: ReadBy, QuarantinedBy, Rows.
var families = []func(string) Name{ReadBy, QuarantinedBy, RowsBy}

// Filed reports whether CountsOf files counter name in a map (families) or a delay histogram.
func Filed(name string) bool {
	for _, f := range families {
		if _, ok := Of(f, name); ok {
			return true
		}
	}
	for i := range delay.Buckets {
		if name == string(Bucket(Lateness, i)) || name == string(Bucket(Arrival, i)) {
			return true
		}
	}
	return false
}
