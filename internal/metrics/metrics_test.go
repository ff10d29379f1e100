package metrics

import (
	"maps"
	"testing"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/delay"
)

// Every name a DoFn reports under parses back into its field of Counts.
func TestCountsOfParsesEveryName(t *testing.T) {
	named := map[string]int64{}
	set := func(n Name, v int64) { named[string(n)] = v }
	set(Read, 10)
	set(Counted, 4)
	set(Duplicates, 2)
	set(Conflicts, 1)
	set(Quarantined, 2)
	set(TooLate, 1)
	set(AfterFinal, 0)
	set(SinkRowsAccepted, 7)
	set(SinkRowsStale, 3)
	set(SinkAuditInserted, 6)
	set(SinkRetries, 5)
	set(DedupElements, 25)
	set(QuarantinedBy("bad_json"), 2)
	set(ReadBy("p0"), 6)
	set(ReadBy("p1"), 4)
	set(RowsBy("FINAL"), 3)
	set(Bucket(Lateness, 0), 3)
	set(Bucket(Lateness, len(delay.Buckets)-1), 1)
	set(Bucket(Arrival, 1), 4)
	set(IdleTransitions("p0"), 9) // reported, not a figure of Counts

	c := CountsOf(named)
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Read != 10 || c.Counted != 4 || c.Duplicates != 2 || c.Conflicts != 1 || c.Quarantined != 2 || c.TooLate != 1 {
		t.Errorf("conservation figures: %s", c.Identity())
	}
	if c.SinkAccepted != 7 || c.SinkStale != 3 || c.SinkAudit != 6 || c.SinkRetries != 5 {
		t.Errorf("sink figures: %+v", c)
	}
	if c.DedupElements != 25 || c.DedupElementsPerThousand() != 2500 {
		t.Errorf("dedup elements %d, %v per 1,000 read; want 25, 2500", c.DedupElements, c.DedupElementsPerThousand())
	}
	if (Counts{}).DedupElementsPerThousand() != 0 {
		t.Error("fan-out of a run that read nothing is not 0")
	}
	if !maps.Equal(c.QuarantinedBy, map[string]int64{"bad_json": 2}) || !maps.Equal(c.ReadBy, map[string]int64{"p0": 6, "p1": 4}) ||
		!maps.Equal(c.Rows, map[string]int64{"FINAL": 3}) {
		t.Errorf("by reason %v, by partition %v, by state %v", c.QuarantinedBy, c.ReadBy, c.Rows)
	}
	if got := c.Lateness.Counts(); got[0] != 3 || got[len(got)-1] != 1 {
		t.Errorf("lateness buckets %v", got)
	}
	if got := c.Arrival.Counts(); got[1] != 4 {
		t.Errorf("arrival buckets %v", got)
	}
	set(AfterFinal, 1)
	if CountsOf(named).Check() == nil {
		t.Error("an event after FINAL passed Check")
	}
}

// Distributions sums each name's steps in the namespace; an empty step leaves Min and Max alone.
func TestDistributionsSumsAcrossSteps(t *testing.T) {
	dist := func(ns, name, step string, v beammetrics.DistributionValue) beammetrics.DistributionResult {
		return beammetrics.DistributionResult{Attempted: v, Key: beammetrics.StepKey{Step: step, Name: name, Namespace: ns}}
	}
	m := beammetrics.NewResults(nil, []beammetrics.DistributionResult{
		dist(Namespace, "d", "a", beammetrics.DistributionValue{Count: 2, Sum: 30, Min: 10, Max: 20}),
		dist(Namespace, "d", "b", beammetrics.DistributionValue{}),
		dist(Namespace, "d", "c", beammetrics.DistributionValue{Count: 1, Sum: 5, Min: 5, Max: 5}),
		dist("other", "d", "a", beammetrics.DistributionValue{Count: 1, Sum: 99, Min: 99, Max: 99}),
	}, nil, nil, nil)
	got := Distributions(*m, Namespace)
	want := map[string]DistributionSum{"d": {Count: 3, Sum: 35, Min: 5, Max: 20}}
	if !maps.Equal(got, want) {
		t.Errorf("Distributions = %v, want %v", got, want)
	}
}
