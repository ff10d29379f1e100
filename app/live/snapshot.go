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
	"strings"
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
	// Cause is what made the job write the revision (Cause*), from its
	// state and writer.
	Cause string `json:"cause"`
	// AddedEvents and AddedRevenueMicros are the change from the previous
	// revision (the first one's: from nothing); a reconcile correction may
	// lower them.
	AddedEvents        int64 `json:"added_events"`
	AddedRevenueMicros int64 `json:"added_revenue_micros"`
	// WrittenAt is when the sink accepted the revision (the changelog's
	// written_at), absent where the sink's reader returns none
	// (Snapshot.WriteTimes); AfterEndMs is WrittenAt − the window's end:
	// on a live feed, how long after its end on the clock the row came.
	WrittenAt   string `json:"written_at,omitempty"`
	WrittenAtMs int64  `json:"written_at_ms,omitempty"`
	AfterEndMs  *int64 `json:"written_after_end_ms,omitempty"`
}

// The causes of a revision (Revision.Cause), SPEC §4. The sink does not
// record which partition delivered a LATE revision's data.
const (
	// CauseEarlyTick: an EARLY row, written when the processing-time
	// trigger (every --early) found the snapshot changed since the last.
	CauseEarlyTick = "early_tick"
	// CauseWatermark: the ON_TIME row, written when the watermark passed
	// the window's end.
	CauseWatermark = "watermark"
	// CauseLateData: a LATE row, written for data that came within the
	// allowed lateness after the ON_TIME row, or for a window whose first
	// data came once the watermark had passed its end.
	CauseLateData = "late_data"
	// CauseClosed: the FINAL row, written when the watermark passed the
	// window's end + allowed lateness, changed or not.
	CauseClosed = "closed"
	// CauseReconcile: a correction written by reconcile --apply (writer
	// reconcile:<run_id>).
	CauseReconcile = "reconcile"
)

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
	// WriteTimes says the sink's reader returns when each revision was
	// written (SQLite and BigQuery read their changelog's written_at; the
	// jsonl debug sink's reader does not).
	WriteTimes bool `json:"write_times"`
	// SinkError is why the sink could not be read, if it could not.
	SinkError string `json:"sink_error,omitempty"`
	// Series is the figures over the last minutes, once there are any.
	Series *SeriesView `json:"series,omitempty"`
	// Audit is the latest records of the audit tables, for a sink that
	// can be read.
	Audit *Audit `json:"audit,omitempty"`
	// Idle is the partitions' idle episodes, once there are figures.
	Idle *IdleView `json:"idle,omitempty"`
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
	// idle follows the partitions' idleness from snapshot to snapshot.
	idle idleTracker
}

// sinkRows is what a snapshot shows from the sink, with when it was read
// and from which window on the next read may start.
type sinkRows struct {
	at      time.Time
	windows []Window
	keys    int
	err     string
	written bool
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
	s.Windows, s.Keys, s.WriteTimes, s.SinkError, s.Audit = slices.Clone(m.rows.windows), m.rows.keys, m.rows.written, m.rows.err, m.audit
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

// entryReader is a sink reader that returns the changelog with when each
// revision was written (sinks.SQLite, sinks.BigQuery), whole or from a
// window_start.
type entryReader interface {
	ChangelogEntries(ctx context.Context) ([]sinks.ChangelogEntry, error)
	ChangelogEntriesFrom(ctx context.Context, windowStart int64) ([]sinks.ChangelogEntry, error)
}

// readSink reads the latest windows from the sink's changelog into m.rows.
// The reader is opened once, when the sink exists, and kept.
//
// A sink that can read part of its changelog where it stores it (SQLite's
// index, BigQuery's partitions) is read whole once, then only from the
// oldest key shown on: what a refresh reads stays about the size of the
// windows shown, however long the job has run. The jsonl debug sink is
// read whole every time, without write times.
func (m *Monitor) readSink(ctx context.Context) error {
	if m.Reader == nil {
		r, ok, err := sinks.OpenReader(ctx, m.Sink)
		if err != nil || !ok {
			return err
		}
		m.Reader = r
	}
	var (
		entries []sinks.ChangelogEntry
		keys    = -1
		err     error
	)
	recent, isRecent := m.Reader.(sinks.RecentReader)
	er, written := m.Reader.(entryReader)
	bounded := m.rows.bounded && (written || isRecent)
	switch {
	case written && bounded:
		entries, err = er.ChangelogEntriesFrom(ctx, m.rows.from)
	case written:
		entries, err = er.ChangelogEntries(ctx)
	default:
		var rows []model.Row
		if bounded {
			rows, err = recent.ChangelogFrom(ctx, m.rows.from)
		} else {
			rows, err = m.Reader.Changelog(ctx)
		}
		for _, r := range rows {
			entries = append(entries, sinks.ChangelogEntry{Row: r})
		}
	}
	if err != nil {
		return fmt.Errorf("sink %s: %w", m.Sink, err)
	}
	if isRecent {
		n, err := recent.KeyCount(ctx)
		if err != nil {
			return fmt.Errorf("sink %s: %w", m.Sink, err)
		}
		keys = int(n)
	}
	rows := make([]model.Row, len(entries))
	at := make(map[revKey]time.Time, len(entries))
	for i, e := range entries {
		rows[i] = e.Row
		if !e.WrittenAt.IsZero() {
			at[revKey{e.WindowStart, e.Dims, e.Revision}] = e.WrittenAt
		}
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
	m.rows.windows, m.rows.keys, m.rows.written = nil, keys, written
	for _, h := range latest {
		m.rows.windows = append(m.rows.windows, window(h, at))
	}
	return nil
}

// revKey names one revision of a key.
type revKey struct {
	start    int64
	dims     string
	revision int64
}

// maxRevisions caps a window's revisions shown: the first and the latest
// ones tell the story.
const maxRevisions = 10

// window is h as shown, with each revision's cause, change and, where at
// has it, when it was written.
func window(h report.WindowHistory, at map[revKey]time.Time) Window {
	w := Window{Start: model.FormatTime(h.WindowStart), End: model.FormatTime(h.WindowEnd), StartMs: h.WindowStart, EndMs: h.WindowEnd, Dims: h.Dims}
	revs := make([]Revision, len(h.Revisions))
	var prev model.Row // the revision before: from nothing for the first
	for i, r := range h.Revisions {
		v := Revision{Revision: r.Revision, State: r.State.String(), Revenue: model.FormatMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros,
			Count: r.EventCount, Writer: writer(r.Writer), Cause: cause(r),
			AddedEvents: r.EventCount - prev.EventCount, AddedRevenueMicros: r.RevenueMicros - prev.RevenueMicros}
		if t, ok := at[revKey{h.WindowStart, h.Dims, r.Revision}]; ok {
			after := t.UnixMilli() - h.WindowEnd
			v.WrittenAt, v.WrittenAtMs, v.AfterEndMs = t.UTC().Format("2006-01-02T15:04:05.000Z"), t.UnixMilli(), &after
		}
		revs[i], prev = v, r
	}
	if len(revs) > maxRevisions {
		w.Omitted = len(revs) - maxRevisions
		revs = append(slices.Clip(revs[:2]), revs[len(revs)-(maxRevisions-2):]...)
	}
	w.Revisions = revs
	if n := len(h.Revisions); n > 0 {
		last := h.Revisions[n-1]
		w.State, w.Revenue, w.RevenueMicros, w.Count, w.Revision = last.State.String(), model.FormatMicros(last.RevenueMicros), last.RevenueMicros, last.EventCount, last.Revision
	}
	return w
}

// cause is what made the job write r (see the Cause constants).
func cause(r model.Row) string {
	if strings.HasPrefix(r.Writer, "reconcile:") { // app/reconcile.Writer
		return CauseReconcile
	}
	switch r.State {
	case model.Early:
		return CauseEarlyTick
	case model.OnTime:
		return CauseWatermark
	case model.Late:
		return CauseLateData
	case model.Final:
		return CauseClosed
	}
	return ""
}

// writer shows only writers other than the stream.
func writer(w string) string {
	if w == "stream" {
		return ""
	}
	return w
}
