package launch

import (
	"context"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/transforms"
)

// uiAddr checks --ui and turns it into a listen address.
func uiAddr(s string) (string, error) { return live.Addr(s) }

// metricsAddr checks --metrics-addr and turns it into a listen address.
func metricsAddr(s string) (string, error) { return live.FlagAddr("--metrics-addr", s) }

// jobFigures gives the live views (app/live) the running job's figures, from
// the job service's metrics wherever the workers run: committed counters,
// and the sources' watermark and idleness gauges per partition.
type jobFigures struct {
	name string

	mu sync.Mutex
	j  *job
}

// figures is a live.FiguresFunc.
func (f *jobFigures) figures(ctx context.Context) (live.Figures, bool) {
	m := f.metrics(ctx)
	if m == nil {
		return live.Figures{}, false
	}
	c := readingOf(*m).Counts
	return live.Figures{Counts: c, Partitions: partitionsOf(m, c.ReadBy), Distributions: distributionsOf(m)}, true
}

// reading reads the job's counters for the sealer (ok false: the job
// service did not answer).
func (f *jobFigures) reading(ctx context.Context) (reading, bool) {
	m := f.metrics(ctx)
	if m == nil {
		return reading{}, false
	}
	return readingOf(*m), true
}

// metrics reads the job's metrics from its job service (nil: no answer).
func (f *jobFigures) metrics(ctx context.Context) *beammetrics.Results {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var m *beammetrics.Results
	if j := f.job(ctx); j != nil {
		m, _ = j.metrics(ctx)
	}
	return m
}

// distributionsOf sums the distributions of the revenue namespace by name
// across steps.
func distributionsOf(m *beammetrics.Results) map[string]live.Distribution {
	out := map[string]live.Distribution{}
	for _, r := range m.AllMetrics().Distributions() {
		if r.Namespace() != transforms.Namespace {
			continue
		}
		v := r.Result()
		d, seen := out[r.Name()]
		if !seen {
			d.Min, d.Max = v.Min, v.Max
		}
		d.Count, d.Sum, d.Min, d.Max = d.Count+v.Count, d.Sum+v.Sum, min(d.Min, v.Min), max(d.Max, v.Max)
		out[r.Name()] = d
	}
	return out
}

// job finds the running job in the job service, once.
func (f *jobFigures) job(ctx context.Context) *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.j == nil {
		f.j, _ = findJob(ctx, *jobopts.Endpoint, f.name) // tried again next time: it may not be submitted yet
	}
	return f.j
}

func (f *jobFigures) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.j != nil {
		f.j.close()
		f.j = nil
	}
}

// partitionsOf reads each partition's watermark and idleness from the
// sources' gauges, with its read count.
func partitionsOf(m *beammetrics.Results, readBy map[string]int64) []live.Partition {
	byName := map[string]*live.Partition{}
	get := func(name string) *live.Partition {
		p := byName[name]
		if p == nil {
			p = &live.Partition{Name: name, WatermarkMs: model.NoWatermark}
			byName[name] = p
		}
		return p
	}
	for name, n := range readBy {
		get(name).Read = n
	}
	if m != nil {
		latest := map[string]time.Time{}
		for _, g := range m.AllMetrics().Gauges() {
			if g.Namespace() != transforms.Namespace {
				continue
			}
			if name, ok := strings.CutPrefix(g.Name(), metrics.PubsubStalledPrefix); ok {
				// A stalled reader's bundle does not finish: its gauge is
				// in the attempted (in-flight) metrics, and the latest
				// value of either kind is the current one.
				v := g.Attempted
				if g.Committed.Timestamp.After(v.Timestamp) {
					v = g.Committed
				}
				if t, ok := latest[g.Name()]; ok && !v.Timestamp.After(t) {
					continue
				}
				latest[g.Name()] = v.Timestamp
				get(name).StalledMs = v.Value
				continue
			}
			v := g.Result()
			if t, ok := latest[g.Name()]; ok && !v.Timestamp.After(t) {
				continue
			}
			latest[g.Name()] = v.Timestamp
			if name, ok := strings.CutPrefix(g.Name(), "watermark_lag_ms_"); ok {
				// The lag was measured when the gauge was set.
				get(name).WatermarkMs = v.Timestamp.UnixMilli() - v.Value
			} else if name, ok := strings.CutPrefix(g.Name(), "partition_idle_"); ok {
				get(name).Idle = v.Value == 1
			}
		}
	}
	out := make([]live.Partition, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out
}

// termView redraws the live table in place on a terminal.
type termView struct {
	w     io.Writer
	drawn bool
}

// draw clears the screen below the banner's place and prints s. The whole
// screen is redrawn (cursor home, clear): log lines written meanwhile on
// stderr would break a redraw that moves up by its own height.
func (v *termView) draw(s live.Snapshot) {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	live.WriteTable(&b, s, true)
	b.WriteString("\n(Ctrl-C stops gracefully and prints the summary)\n")
	io.WriteString(v.w, b.String())
	v.drawn = true
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
