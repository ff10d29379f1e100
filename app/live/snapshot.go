// Package live shows a running job: the sink's latest windows and the job's figures, as a terminal
// table (WriteTable) or a web page polling a JSON endpoint (Handler); and runs the live demo (Demo).
package live

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/triggers"
)

// Partition is one source partition as the job's metrics report it.
type Partition struct {
	Name        string `json:"name"`
	WatermarkMs int64  `json:"watermark_ms"` // or model.NoWatermark
	Idle        bool   `json:"idle"`
	Read        int64  `json:"read"`
	// StalledMs is how long a Pub/Sub reader key has held messages past --pubsub-stall-after.
	StalledMs int64 `json:"stalled_ms,omitempty"`
}

// Figures are the job's figures so far.
type Figures struct {
	Counts        metrics.Counts
	Partitions    []Partition
	Distributions map[string]metrics.DistributionSum // by name, for /metrics
}

// FiguresFunc fetches the running job's figures; ok is false while there are none.
type FiguresFunc func(ctx context.Context) (f Figures, ok bool)

// Window is one (window, dims) key's history, oldest first, its first two and last eight revisions,
// with how far the watermark has to go to ON_TIME (the end) and FINAL (CloseMs: end + lateness).
type Window struct {
	report.Window
	OnTimeNeedsMs *int64 `json:"on_time_watermark_needs_ms,omitempty"`
	CloseMs       *int64 `json:"close_ms,omitempty"`
	FinalNeedsMs  *int64 `json:"final_watermark_needs_ms,omitempty"`
}

// liveTrim is the revisions a window shows: its first two and last eight.
var liveTrim = report.Trim{Head: 2, Tail: 8}

// PartitionView is a partition as shown.
type PartitionView struct {
	Partition
	Watermark string `json:"watermark"`
	Behind    string `json:"behind"` // the watermark's lag behind the snapshot's time
	BehindMs  *int64 `json:"behind_ms,omitempty"`
}

// Snapshot is everything a view shows at one instant.
type Snapshot struct {
	Title     string `json:"title"`
	At        string `json:"at"`
	AtMs      int64  `json:"at_ms"`
	Elapsed   string `json:"elapsed"`
	ElapsedMs int64  `json:"elapsed_ms"`
	State     string `json:"state"`
	// Final says the job has ended (FinalState), at EndedAtMs.
	Final      bool            `json:"final"`
	EndedAt    string          `json:"ended_at,omitempty"`
	EndedAtMs  int64           `json:"ended_at_ms,omitempty"`
	Settings   []report.Figure `json:"settings"`
	Figures    bool            `json:"figures"` // false until the job reports any
	Read       int64           `json:"read"`
	Terms      []metrics.Term  `json:"terms"`
	Conserved  bool            `json:"conserved"`
	Identity   string          `json:"identity"`
	Rows       []metrics.Term  `json:"rows_by_state"`
	Partitions []PartitionView `json:"partitions"`
	// Watermark is the minimum over active partitions (SPEC §2).
	Watermark   string   `json:"watermark"`
	WatermarkMs *int64   `json:"watermark_ms,omitempty"`
	Windows     []Window `json:"windows"`
	// Keys is how many keys the sink holds; Windows has the latest. WriteTimes says the reader
	// returns written_at (not jsonl).
	Keys       int         `json:"keys"`
	WriteTimes bool        `json:"write_times"`
	SinkError  string      `json:"sink_error,omitempty"`
	Series     *SeriesView `json:"series,omitempty"`
	Audit      *Audit      `json:"audit,omitempty"`
	Idle       *IdleView   `json:"idle,omitempty"`

	figures Figures // as reported (Figures: any), for /metrics
}

// Monitor assembles snapshots of a running job; safe for concurrent use.
type Monitor struct {
	Title    string
	Settings []report.Figure
	Sink     sink.Spec
	// Windows is how many of the latest keys a snapshot holds (default 8), MaxAge how long a
	// snapshot is reused (default 1s), SinkEvery sink rows (default MaxAge; BigQuery bills queries).
	Windows           int
	MaxAge, SinkEvery time.Duration
	// Reader, if set, is read instead of one opened on Sink; Close closes it.
	Reader sink.Reader
	// AuditEvery is how often the audit tables are read (default DefaultAuditEvery, at most as
	// often as SinkEvery); AuditLatest how many records each (default DefaultAuditLatest).
	AuditEvery  time.Duration
	AuditLatest int
	Series      Series
	// Triggers (window, allowed lateness) and OutOfOrderBound are the job's settings, for
	// countdowns and the audit's windows (a zero window: none).
	Triggers        triggers.Policy
	OutOfOrderBound time.Duration
	Now             func() time.Time // the clock (nil: time.Now)

	mu      sync.Mutex
	figures FiguresFunc
	state   string
	started time.Time
	ended   time.Time
	last    Snapshot
	lastAt  time.Time
	rows    sinkRows
	audit   *Audit
	auditAt time.Time
	idle    idleTracker
}

// sinkRows is what a snapshot shows from the sink, read when, and from which window on.
type sinkRows struct {
	at      time.Time
	windows []Window
	keys    int
	err     string
	written bool
	// from is the oldest shown key's window_start once bounded: the latest keys stay after it.
	from    int64
	bounded bool
}

// Start sets where the job's figures come from, and the job's state.
func (m *Monitor) Start(f FiguresFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.figures, m.state, m.started, m.ended, m.lastAt = f, "RUNNING", m.now(), time.Time{}, time.Time{}
}

func (m *Monitor) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// FinalState says the job has ended in state: DONE, CANCELLED or FAILED.
func FinalState(state string) bool {
	return state == "DONE" || state == "CANCELLED" || state == "FAILED"
}

// SetState records the job's state and drops the cached snapshot, rows and audit records, so the
// views end on what the sink holds.
func (m *Monitor) SetState(state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state, m.lastAt, m.rows.at, m.auditAt = state, time.Time{}, time.Time{}, time.Time{}
	if FinalState(state) && m.ended.IsZero() {
		m.ended = m.now()
	}
}

// Close releases the sink reader.
func (m *Monitor) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Reader == nil {
		return nil
	}
	err := m.Reader.Close()
	m.Reader = nil
	return err
}

// Snapshot returns the current snapshot, reading at most once per MaxAge.
func (m *Monitor) Snapshot(ctx context.Context) Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	maxAge := cmp.Or(m.MaxAge, time.Second)
	now := m.now()
	if !m.lastAt.IsZero() && now.Sub(m.lastAt) < maxAge {
		return m.last
	}
	s := Snapshot{Title: m.Title, At: now.UTC().Format(time.RFC3339), AtMs: now.UnixMilli(), State: cmp.Or(m.state, "STARTING"), Settings: m.Settings}
	if !m.ended.IsZero() {
		s.Final, s.EndedAt, s.EndedAtMs = true, m.ended.UTC().Format(time.RFC3339), m.ended.UnixMilli()
	}
	if !m.started.IsZero() {
		d := cmp.Or(m.ended, now).Sub(m.started) // an ended job's time stops at its end
		s.Elapsed, s.ElapsedMs = d.Round(time.Second).String(), d.Milliseconds()
	}
	if m.figures != nil {
		if f, ok := m.figures(ctx); ok {
			s.setFigures(f, now)
			if !s.Final {
				m.Series.Add(now, f)
				m.idle.add(now.UnixMilli(), f.Partitions)
			}
			s.Idle = m.idle.view(s.AtMs, s.EndedAtMs, f)
		}
	}
	if m.Series.Len() > 0 {
		v := m.Series.View()
		s.Series = &v
	}
	if m.rows.at.IsZero() || now.Sub(m.rows.at) >= cmp.Or(m.SinkEvery, maxAge) {
		m.rows.at, m.rows.err = now, ""
		if err := m.readSink(ctx); err != nil {
			m.rows.err = err.Error()
		}
	}
	if m.Reader != nil && (m.auditAt.IsZero() || now.Sub(m.auditAt) >= m.auditEvery()) {
		m.auditAt = now
		m.audit = m.readAudit(ctx, now)
	}
	s.Windows, s.Keys, s.WriteTimes, s.SinkError, s.Audit = slices.Clone(m.rows.windows), m.rows.keys, m.rows.written, m.rows.err, m.audit
	s.countdowns(m.Triggers)
	m.last, m.lastAt = s, now
	return s
}

func (s *Snapshot) setFigures(f Figures, now time.Time) {
	c := f.Counts
	s.figures, s.Figures = f, true
	s.Read = c.Read
	s.Terms = c.Terms()
	s.Conserved = c.Conserved()
	s.Identity = c.Identity()
	for _, st := range model.ResultStates {
		s.Rows = append(s.Rows, metrics.Term{Name: st.String(), Value: c.Rows[st.String()]})
	}
	for _, p := range f.Partitions {
		v := PartitionView{Partition: p, Watermark: "-", Behind: "-", BehindMs: lag(now.UnixMilli(), p.WatermarkMs)}
		if v.BehindMs != nil {
			v.Watermark = model.FormatTime(p.WatermarkMs)
			v.Behind = (time.Duration(*v.BehindMs) * time.Millisecond).Round(100 * time.Millisecond).String()
		}
		s.Partitions = append(s.Partitions, v)
	}
	wm := pipelineWatermark(f.Partitions)
	s.Watermark = "-"
	if wm != model.NoWatermark {
		s.Watermark, s.WatermarkMs = model.FormatTime(wm), &wm
	}
}

// countdowns sets the windows' countdowns to ON_TIME and FINAL.
func (s *Snapshot) countdowns(p triggers.Policy) {
	if s.WatermarkMs == nil {
		return
	}
	wm := *s.WatermarkMs
	for i := range s.Windows {
		w := &s.Windows[i]
		onTime := w.EndMs - wm
		w.OnTimeNeedsMs = &onTime
		if p.Window > 0 {
			closed := w.EndMs + p.AllowedLateness.Milliseconds()
			final := closed - wm
			w.CloseMs, w.FinalNeedsMs = &closed, &final
		}
	}
}

// readSink reads the latest windows into m.rows, opening the reader once: whole once, then from
// the oldest key shown on (jsonl, which has no write times: whole every time).
func (m *Monitor) readSink(ctx context.Context) error {
	if m.Reader == nil {
		r, ok, err := sink.OpenReader(ctx, m.Sink)
		if err != nil || !ok {
			return err
		}
		m.Reader = r
	}
	// A RecentReader filters where it stores and keeps written_at; jsonl is read whole.
	recent, written := m.Reader.(sink.RecentReader)
	var q sink.Query
	if written && m.rows.bounded {
		q.From = &m.rows.from
	}
	entries, err := m.Reader.Changelog(ctx, q)
	if err != nil {
		return fmt.Errorf("sink %s: %w", m.Sink, err)
	}
	rows := make([]model.Row, 0, len(entries))
	at := map[revKey]time.Time{}
	for _, e := range entries {
		rows = append(rows, e.Row)
		if written {
			at[revKey{e.WindowStart, e.Dims, e.Revision}] = e.WrittenAt
		}
	}
	hist := report.WindowsFromChangelog(rows)
	keys := len(hist)
	if written {
		n, err := recent.KeyCount(ctx)
		if err != nil {
			return fmt.Errorf("sink %s: %w", m.Sink, err)
		}
		keys = int(n)
	}
	n := cmp.Or(m.Windows, 8)
	latest := hist[max(0, len(hist)-n):]
	if len(latest) == n {
		m.rows.from, m.rows.bounded = latest[0].WindowStart, true
	}
	slices.Reverse(latest) // newest first
	m.rows.windows, m.rows.keys, m.rows.written = nil, keys, written
	for _, h := range latest {
		m.rows.windows = append(m.rows.windows, Window{Window: report.NewWindow(h, liveTrim, func(r model.Row) (time.Time, bool) {
			t := at[revKey{r.WindowStart, r.Dims, r.Revision}]
			return t, !t.IsZero()
		})})
	}
	return nil
}

type revKey struct {
	start    int64
	dims     string
	revision int64
}

// FiguresOf reads a job's figures from its metrics: committed counters, the revenue distributions
// summed across steps, and each partition's watermark, idleness and stall from the sources' gauges.
func FiguresOf(m *beammetrics.Results) Figures {
	c, _, _ := metrics.Committed(*m)
	f := Figures{Counts: c, Distributions: metrics.Distributions(*m, metrics.Namespace)}
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
