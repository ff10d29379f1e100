package live

import (
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// FiguresOf reads a job's figures from its metrics: committed counters, the revenue
// distributions summed across steps, and each partition's watermark, idleness and stall from the
// sources' gauges.
func FiguresOf(m *beammetrics.Results) Figures {
	c, _, _ := metrics.Committed(*m)
	f := Figures{Counts: c, Distributions: map[string]Distribution{}}
	for _, r := range m.AllMetrics().Distributions() {
		if r.Namespace() != metrics.Namespace {
			continue
		}
		d := f.Distributions[r.Name()]
		d.Add(r.Result())
		f.Distributions[r.Name()] = d
	}
	byName := map[string]*Partition{}
	get := func(name string) *Partition {
		if byName[name] == nil {
			byName[name] = &Partition{Name: name, WatermarkMs: model.NoWatermark}
		}
		return byName[name]
	}
	for name, n := range c.ReadBy {
		get(name).Read = n
	}
	latest := map[string]time.Time{}
	for _, g := range m.AllMetrics().Gauges() {
		if g.Namespace() != metrics.Namespace {
			continue
		}
		v := g.Result()
		name, stalled := metrics.Of(metrics.PubsubStalled, g.Name())
		if stalled {
			// A stalled reader's bundle does not finish: the latest value of either kind is current.
			if v = g.Attempted; g.Committed.Timestamp.After(v.Timestamp) {
				v = g.Committed
			}
		}
		if t, ok := latest[g.Name()]; ok && !v.Timestamp.After(t) {
			continue
		}
		latest[g.Name()] = v.Timestamp
		if stalled {
			get(name).StalledMs = v.Value
		} else if name, ok := metrics.Of(metrics.WatermarkLag, g.Name()); ok {
			get(name).WatermarkMs = v.Timestamp.UnixMilli() - v.Value // the lag when the gauge was set
		} else if name, ok := metrics.Of(metrics.PartitionIdle, g.Name()); ok {
			get(name).Idle = v.Value == 1
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		f.Partitions = append(f.Partitions, *byName[name])
	}
	return f
}

// Redraw redraws the terminal table of s. The whole screen is redrawn (cursor home, clear): log
// lines written meanwhile on stderr would break a redraw that moves up by its own height.
func Redraw(w io.Writer, s Snapshot) {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	WriteTable(&b, s, true)
	b.WriteString("\n(Ctrl-C stops gracefully and prints the summary)\n")
	io.WriteString(w, b.String())
}
