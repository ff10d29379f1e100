package launch

import (
	"bytes"
	"strings"
	"testing"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/metrics"
)

// A Pub/Sub reader key's stall gauge reaches the progress line: the value
// of the latest report, in-flight (attempted: the stalled bundle does not
// finish) or committed, whichever is newer. A key whose stall ended (a
// newer committed 0) and a run with no stall show none.
func TestProgressShowsStall(t *testing.T) {
	t0 := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(5 * time.Second)
	gauge := func(part string, attempted, committed beammetrics.GaugeValue) beammetrics.GaugeResult {
		return beammetrics.GaugeResult{Attempted: attempted, Committed: committed,
			Key: beammetrics.StepKey{Step: "pubsub.Read", Name: string(metrics.PubsubStalled(part)), Namespace: metrics.Namespace}}
	}
	m := beammetrics.NewResults(nil, nil, []beammetrics.GaugeResult{
		gauge("pubsub", beammetrics.GaugeValue{Value: 65_000, Timestamp: t1}, beammetrics.GaugeValue{Value: 0, Timestamp: t0}),
		gauge("pubsub-01", beammetrics.GaugeValue{Value: 65_000, Timestamp: t0}, beammetrics.GaugeValue{Value: 0, Timestamp: t1}),
	}, nil, nil)
	parts := live.FiguresOf(m).Partitions
	got := map[string]int64{}
	for _, p := range parts {
		got[p.Name] = p.StalledMs
	}
	if got["pubsub"] != 65_000 || got["pubsub-01"] != 0 || len(parts) != 2 {
		t.Errorf("stalls by partition %v (of %+v), want pubsub 65000 ms, pubsub-01 none", got, parts)
	}

	line := func(m *beammetrics.Results) string {
		var b bytes.Buffer
		p := &progress{w: &b, terminal: true, started: time.Now(), last: time.Now()}
		p.report(metrics.Counts{}, live.FiguresOf(m).Partitions, nil, 0)
		return b.String()
	}
	if l := line(m); !strings.Contains(l, "STALLED pubsub 1m5s") || strings.Contains(l, "pubsub-01") {
		t.Errorf("progress line %q: want STALLED pubsub 1m5s and nothing of pubsub-01", l)
	}
	if l := line(beammetrics.NewResults(nil, nil, nil, nil, nil)); strings.Contains(l, "STALLED") {
		t.Errorf("progress line %q without a stall", l)
	}
}
