// Package live shows a running job as it goes: a snapshot of what the sink
// holds (the revisions of the latest windows) and of the job's own figures
// (the conservation counters, each partition's watermark and idleness),
// rendered as a table redrawn in a terminal (WriteTable) or as a small web
// page that polls a JSON endpoint (Handler).
//
// Nothing here reads process-wide state: rows come through the sink's
// reader (sinks.Reader), which every worker and the launcher reach alike,
// and figures through the Figures function the launcher supplies from the
// job's metrics.
package live

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
)

// Partition is one source partition as the job's metrics report it.
type Partition struct {
	Name string `json:"name"`
	// WatermarkMs is the partition's reported watermark (epoch ms), or
	// model.NoWatermark before its first valid event.
	WatermarkMs int64 `json:"watermark_ms"`
	Idle        bool  `json:"idle"`
	Read        int64 `json:"read"`
	// StalledMs is how long a Pub/Sub reader key (its archive partition)
	// has held messages without emitting any, once past
	// --pubsub-stall-after (0: not stalled).
	StalledMs int64 `json:"stalled_ms,omitempty"`
}

// Figures are the job's figures so far.
type Figures struct {
	Counts     pipeline.Counts
	Partitions []Partition
	// Distributions are the job's distributions of the metrics namespace
	// by name (for /metrics: the delays' sums, the dedup state's size).
	Distributions map[string]Distribution
}

// FiguresFunc fetches the running job's figures; ok is false while there
// are none yet.
type FiguresFunc func(ctx context.Context) (f Figures, ok bool)

// Setting is one setting shown in the header.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Revision is one accepted snapshot of a window.
type Revision struct {
	Revision int64  `json:"revision"`
	State    string `json:"state"`
	Revenue  string `json:"revenue"`
	// RevenueMicros is Revenue as a number: millionths of the currency.
	RevenueMicros int64  `json:"revenue_micros"`
	Count         int64  `json:"count"`
	Writer        string `json:"writer,omitempty"`
}

// Window is one (window, dims) key's history, oldest revision first;
// Omitted revisions between the first and the last few are left out.
type Window struct {
	Start   string `json:"window_start"`
	End     string `json:"window_end"`
	StartMs int64  `json:"window_start_ms"`
	EndMs   int64  `json:"window_end_ms"`
	Dims    string `json:"dims"`
	State   string `json:"state"`
	Revenue string `json:"revenue"`
	// RevenueMicros is Revenue as a number: millionths of the currency.
	RevenueMicros int64      `json:"revenue_micros"`
	Count         int64      `json:"count"`
	Revision      int64      `json:"revision"`
	Revisions     []Revision `json:"revisions"`
	Omitted       int        `json:"omitted"`
	// The countdowns, as of the snapshot: how far the pipeline watermark
	// still has to advance for the window's ON_TIME moment (window end −
	// watermark) and for its FINAL one (CloseMs − watermark, CloseMs being
	// window end + allowed lateness); 0 or less once it has. Absent without
	// a watermark; the FINAL ones also without the job's settings.
	OnTimeNeedsMs *int64 `json:"on_time_watermark_needs_ms,omitempty"`
	CloseMs       *int64 `json:"close_ms,omitempty"`
	FinalNeedsMs  *int64 `json:"final_watermark_needs_ms,omitempty"`
}

// Counter is one term of the conservation identity.
type Counter struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// PartitionView is a partition as shown.
type PartitionView struct {
	Partition
	Watermark string `json:"watermark"`
	// Behind is how far the watermark is behind the snapshot's time;
	// BehindMs the same in ms (absent without a watermark).
	Behind   string `json:"behind"`
	BehindMs *int64 `json:"behind_ms,omitempty"`
}

// Snapshot is everything a view shows at one instant.
type Snapshot struct {
	Title   string `json:"title"`
	At      string `json:"at"`
	AtMs    int64  `json:"at_ms"`
	Elapsed string `json:"elapsed"`
	// ElapsedMs is Elapsed in ms: the job's age.
	ElapsedMs int64  `json:"elapsed_ms"`
	State     string `json:"state"`
	// Final says the job has ended (DONE, CANCELLED or FAILED), at
	// EndedAtMs; Elapsed then stops there.
	Final     bool      `json:"final"`
	EndedAt   string    `json:"ended_at,omitempty"`
	EndedAtMs int64     `json:"ended_at_ms,omitempty"`
	Settings  []Setting `json:"settings"`
	// Figures is false until the job reports any.
	Figures   bool      `json:"figures"`
	Read      int64     `json:"read"`
	Terms     []Counter `json:"terms"`
	Conserved bool      `json:"conserved"`
	Identity  string    `json:"identity"`
	// Rows counts the rows the job emitted by state.
	Rows       []Counter       `json:"rows_by_state"`
	Partitions []PartitionView `json:"partitions"`
	// Watermark is the minimum over active partitions: what the pipeline's
	// watermark is built from (SPEC §2).
	Watermark string `json:"watermark"`
	// WatermarkMs is Watermark in ms since the epoch, absent while no
	// partition has one.
	WatermarkMs *int64   `json:"watermark_ms,omitempty"`
	Windows     []Window `json:"windows"`
	// Keys is how many keys the sink holds; Windows has the latest.
	Keys int `json:"keys"`
	// SinkError is why the sink could not be read, if it could not.
	SinkError string `json:"sink_error,omitempty"`
	// Series is the figures over the last minutes, once there are any.
	Series *SeriesView `json:"series,omitempty"`
	// Audit is the latest records of the audit tables, for a sink that
	// can be read.
	Audit *Audit `json:"audit,omitempty"`
}

// States in lifecycle order.
var states = []model.ResultState{model.Early, model.OnTime, model.Late, model.Final}

// Monitor assembles snapshots of a running job. Its methods are safe for
// concurrent use (the terminal view and the web page share one).
type Monitor struct {
	// Title heads the views; Settings are shown under it.
	Title    string
	Settings []Setting
	// Sink is read for the rows (nothing for a sink without a reader).
	Sink sink.Spec
	// Windows is how many of the latest keys a snapshot holds (default 8).
	Windows int
	// MaxAge is how long a snapshot is reused (default 1s): the page and
	// the terminal share the reads.
	MaxAge time.Duration
	// SinkEvery is how long the rows read from the sink are reused
	// (default MaxAge): a warehouse billed per query (BigQuery) is read
	// less often than the job's figures, which come from the runner.
	SinkEvery time.Duration
	// Reader, if set, is read instead of a reader opened on Sink; Close
	// closes it.
	Reader sinks.Reader
	// AuditEvery is how often the audit tables are read (default
	// DefaultAuditEvery, never more often than SinkEvery); AuditLatest
	// how many records of each are kept (default DefaultAuditLatest).
	AuditEvery  time.Duration
	AuditLatest int
	// Series holds the figures over the last minutes; its zero value
	// keeps DefaultSeriesSpan at most one point per DefaultSeriesStep.
	Series Series
	// Window, AllowedLateness and OutOfOrderBound are the job's settings,
	// for the windows' countdowns to FINAL and the too-late events'
	// lateness; without a window there are no such figures.
	Window, AllowedLateness, OutOfOrderBound time.Duration
	// Now, if set, is the monitor's clock (tests); default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	figures FiguresFunc
	state   string
	started time.Time
	ended   time.Time
	last    Snapshot
	lastAt  time.Time
	rows    sinkRows
	// fig is the figures of the last snapshot (figOK: there were some),
	// for /metrics.
	fig   Figures
	figOK bool
	// audit is the latest audit records, read at auditAt.
	audit   *Audit
	auditAt time.Time
}

// sinkRows is what a snapshot shows from the sink, with when it was read
// and from which window on the next read may start.
type sinkRows struct {
	at      time.Time
	windows []Window
	keys    int
	err     string
	// from is the window_start of the oldest key shown once there are as
	// many keys as shown (bounded): the latest keys stay at or after it
	// for good, since keys are only ever added and a key's revisions all
	// share its window_start.
	from    int64
	bounded bool
}

// Start sets where the job's figures come from, and the job's state.
func (m *Monitor) Start(f FiguresFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.figures, m.state, m.started, m.ended, m.lastAt = f, "RUNNING", m.now(), time.Time{}, time.Time{}
}

// now is the monitor's clock.
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

// SetState records the job's state (RUNNING, STOPPING, DONE, CANCELLED,
// FAILED) and drops the cached snapshot, rows and audit records: the next
// snapshot reads the sink, so the views end on what it holds. A final
// state (FinalState) stays: the views show it, with when the job ended,
// until the process ends, and the time series keep no later points.
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

// Snapshot returns the current snapshot, reading the sink and the figures
// at most once per MaxAge.
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
		until := now
		if s.Final {
			until = m.ended
		}
		s.Elapsed = until.Sub(m.started).Round(time.Second).String()
		s.ElapsedMs = until.Sub(m.started).Milliseconds()
	}
	m.fig, m.figOK = Figures{}, false
	if m.figures != nil {
		if f, ok := m.figures(ctx); ok {
			s.setFigures(f, now)
			m.fig, m.figOK = f, true
			if !s.Final {
				m.Series.Add(now, f)
			}
		}
	}
	if m.Series.Len() > 0 {
		v := m.Series.View()
		s.Series = &v
	}
	if m.rows.at.IsZero() || now.Sub(m.rows.at) >= cmp.Or(m.SinkEvery, maxAge) {
		m.rows.at = now
		if err := m.readSink(ctx); err != nil {
			m.rows.err = err.Error()
		} else {
			m.rows.err = ""
		}
	}
	if m.Reader != nil && (m.auditAt.IsZero() || now.Sub(m.auditAt) >= m.auditEvery()) {
		m.auditAt = now
		m.audit = m.readAudit(ctx, now)
	}
	s.Windows, s.Keys, s.SinkError, s.Audit = slices.Clone(m.rows.windows), m.rows.keys, m.rows.err, m.audit
	s.countdowns(m.policy())
	m.last, m.lastAt = s, now
	return s
}

// Figures returns the job's state and figures as of the current snapshot
// (see Snapshot), and whether there are any yet.
func (m *Monitor) Figures(ctx context.Context) (state string, f Figures, ok bool) {
	s := m.Snapshot(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	return s.State, m.fig, m.figOK
}

func (s *Snapshot) setFigures(f Figures, now time.Time) {
	c := f.Counts
	s.Figures = true
	s.Read = c.Read
	s.Terms = []Counter{{"counted", c.Counted}, {"duplicates", c.Duplicates}, {"conflicts", c.Conflicts},
		{"quarantined", c.Quarantined}, {"too_late", c.TooLate}}
	s.Conserved = c.Read == c.Verdicts()
	s.Identity = c.Identity()
	for _, st := range states {
		s.Rows = append(s.Rows, Counter{st.String(), c.Rows[st.String()]})
	}
	for _, p := range f.Partitions {
		v := PartitionView{Partition: p, Watermark: "-", Behind: "-"}
		if p.WatermarkMs != model.NoWatermark {
			v.Watermark = model.FormatTime(p.WatermarkMs)
			behind := now.UnixMilli() - p.WatermarkMs
			v.Behind, v.BehindMs = (time.Duration(behind) * time.Millisecond).Round(100*time.Millisecond).String(), &behind
		}
		s.Partitions = append(s.Partitions, v)
	}
	wm := pipelineWatermark(f.Partitions)
	s.Watermark = "-"
	if wm != model.NoWatermark {
		s.Watermark, s.WatermarkMs = model.FormatTime(wm), &wm
	}
}

// countdowns sets the windows' countdowns to ON_TIME and FINAL against the
// pipeline watermark.
func (s *Snapshot) countdowns(p policy) {
	if s.WatermarkMs == nil {
		return
	}
	wm := *s.WatermarkMs
	for i := range s.Windows {
		w := &s.Windows[i]
		onTime := w.EndMs - wm
		w.OnTimeNeedsMs = &onTime
		if p.ok {
			closed := w.EndMs + p.AllowedLateness.Milliseconds()
			final := closed - wm
			w.CloseMs, w.FinalNeedsMs = &closed, &final
		}
	}
}

// readSink reads the latest windows from the sink's changelog into m.rows.
// The reader is opened once, when the sink exists, and kept.
//
// A sink that can read part of its changelog where it stores it
// (sinks.RecentReader: SQLite's index, BigQuery's partitions) is read whole
// once, then only from the oldest key shown on: what a refresh reads stays
// about the size of the windows shown, however long the job has run. The
// jsonl debug sink is read whole every time.
func (m *Monitor) readSink(ctx context.Context) error {
	if m.Reader == nil {
		r, ok, err := sinks.OpenReader(ctx, m.Sink)
		if err != nil || !ok {
			return err
		}
		m.Reader = r
	}
	var (
		rows []model.Row
		keys = -1
		err  error
	)
	recent, ok := m.Reader.(sinks.RecentReader)
	if ok && m.rows.bounded {
		rows, err = recent.ChangelogFrom(ctx, m.rows.from)
	} else {
		rows, err = m.Reader.Changelog(ctx)
	}
	if err != nil {
		return fmt.Errorf("sink %s: %w", m.Sink, err)
	}
	if ok {
		n, err := recent.KeyCount(ctx)
		if err != nil {
			return fmt.Errorf("sink %s: %w", m.Sink, err)
		}
		keys = int(n)
	}
	hist := report.WindowsFromChangelog(rows)
	if keys < 0 {
		keys = len(hist)
	}
	n := cmp.Or(m.Windows, 8)
	latest := hist[max(0, len(hist)-n):]
	if len(latest) == n {
		m.rows.from, m.rows.bounded = latest[0].WindowStart, true
	}
	slices.Reverse(latest) // newest first
	m.rows.windows, m.rows.keys = nil, keys
	for _, h := range latest {
		m.rows.windows = append(m.rows.windows, window(h))
	}
	return nil
}

// maxRevisions caps a window's revisions shown: the first and the latest
// ones tell the story.
const maxRevisions = 10

func window(h report.WindowHistory) Window {
	w := Window{Start: model.FormatTime(h.WindowStart), End: model.FormatTime(h.WindowEnd), StartMs: h.WindowStart, EndMs: h.WindowEnd, Dims: h.Dims}
	revs := h.Revisions
	if len(revs) > maxRevisions {
		w.Omitted = len(revs) - maxRevisions
		revs = append(slices.Clip(revs[:2]), revs[len(revs)-(maxRevisions-2):]...)
	}
	for _, r := range revs {
		w.Revisions = append(w.Revisions, Revision{Revision: r.Revision, State: r.State.String(),
			Revenue: model.FormatMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros, Count: r.EventCount, Writer: writer(r.Writer)})
	}
	if n := len(h.Revisions); n > 0 {
		last := h.Revisions[n-1]
		w.State, w.Revenue, w.RevenueMicros, w.Count, w.Revision = last.State.String(), model.FormatMicros(last.RevenueMicros), last.RevenueMicros, last.EventCount, last.Revision
	}
	return w
}

// writer shows only writers other than the stream.
func writer(w string) string {
	if w == "stream" {
		return ""
	}
	return w
}
