package live

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/triggers"
)

// The audit drill-down's defaults: read every DefaultAuditEvery, DefaultAuditLatest records each.
const (
	DefaultAuditEvery  = 10 * time.Second
	DefaultAuditLatest = 10
	maxPayload         = 300 // bytes kept of a line (a quarantined one may be --max-line long)
)

// Audit is the latest records of the audit tables (SPEC §5), newest first, and their row counts.
type Audit struct {
	ReadAt          string             `json:"read_at"`
	ReadAtMs        int64              `json:"read_at_ms"`
	EveryMs         int64              `json:"every_ms"` // how often the tables are read
	TooLateRows     int                `json:"too_late_rows"`
	ConflictRows    int                `json:"conflict_rows"`
	QuarantinedRows int                `json:"quarantined_rows"`
	TooLate         []TooLateEvent     `json:"too_late"`
	Conflicts       []ConflictEvent    `json:"conflicts"`
	Quarantined     []QuarantinedEvent `json:"quarantined"`
	Error           string             `json:"error,omitempty"`
}

// Payload is a record's raw line, cut at maxPayload bytes.
type Payload struct {
	Text  string `json:"payload"`
	Bytes int    `json:"payload_bytes"` // the whole line's; Cut: Text is shorter
	Cut   bool   `json:"payload_cut,omitempty"`
}

func payload(b []byte) Payload {
	p := Payload{Bytes: len(b)}
	if len(b) > maxPayload {
		b, p.Cut = b[:maxPayload], true
		for len(b) > 0 && !utf8.Valid(b) { // not half a character
			b = b[:len(b)-1]
		}
	}
	p.Text = string(b)
	return p
}

// TooLateEvent is a too_late_events row (SPEC §4 rule (a)).
type TooLateEvent struct {
	Position    string `json:"source_position"`
	EventID     string `json:"event_id"`
	EventTime   string `json:"event_time"`
	EventTimeMs int64  `json:"event_time_ms"`
	Reason      string `json:"reason"`
	Payload
	// With the job's settings: the event's window, when it closed, and a lower bound of its
	// lateness (ClosedMs + the out-of-order bound − EventTimeMs; the watermark is not stored).
	WindowStartMs   *int64 `json:"window_start_ms,omitempty"`
	WindowEndMs     *int64 `json:"window_end_ms,omitempty"`
	ClosedMs        *int64 `json:"closed_ms,omitempty"`
	LateByAtLeastMs *int64 `json:"late_by_at_least_ms,omitempty"`
}

// ConflictEvent is a conflict_events row: the conflicting copy's payload and both fingerprints.
type ConflictEvent struct {
	Position               string `json:"source_position"`
	EventID                string `json:"event_id"`
	FirstFingerprint       string `json:"first_fingerprint"`
	ConflictingFingerprint string `json:"conflicting_fingerprint"`
	Payload
}

// QuarantinedEvent is a quarantined_events row.
type QuarantinedEvent struct {
	Position string `json:"source_position"`
	Reason   string `json:"reason"`
	Payload
}

// CompareArrival orders source positions as they arrived: by file name, line number, then
// partition; other positions (pubsub:<message_id>) first, by text. The sinks sort so in SQL.
func CompareArrival(a, b string) int {
	pa, fa, la, oka := rawlog.ParsePosition(a)
	pb, fb, lb, okb := rawlog.ParsePosition(b)
	switch {
	case oka && okb:
		return cmp.Or(strings.Compare(fa, fb), cmp.Compare(la, lb), strings.Compare(pa, pb))
	case oka != okb:
		if oka {
			return 1
		}
		return -1
	}
	return strings.Compare(a, b)
}

// latest returns the n records of rows that arrived last, newest first.
func latest[T any](rows []T, n int, pos func(T) string) []T {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b T) int { return CompareArrival(pos(b), pos(a)) })
	return rows[:min(n, len(rows))]
}

// readAudit reads the latest records of each audit table and the tables' row counts through the
// reader readSink opened; a table that cannot be read leaves the others shown and its error said.
func (m *Monitor) readAudit(ctx context.Context, now time.Time) *Audit {
	if m.Reader == nil {
		return nil
	}
	a := &Audit{ReadAt: now.UTC().Format(time.RFC3339), ReadAtMs: now.UnixMilli(), EveryMs: m.auditEvery().Milliseconds()}
	var (
		n      = cmp.Or(m.AuditLatest, DefaultAuditLatest)
		read   sink.Audit
		counts sink.AuditCounts
		errs   [2]error // the audit tables (each error names its table), row counts
	)
	// A RecentReader cuts the latest records and counts where they are stored, so a monitor never
	// holds a whole table; jsonl is cut here.
	if lr, ok := m.Reader.(sink.RecentReader); ok {
		read, errs[0] = lr.LatestAudit(ctx, n)
		counts, errs[1] = lr.AuditCounts(ctx)
	} else {
		read, errs[0] = m.Reader.Audit(ctx)
		counts = read.Counts()
		read.TooLate = latest(read.TooLate, n, func(r model.TooLate) string { return r.Position })
		read.Conflicts = latest(read.Conflicts, n, func(r model.Conflict) string { return r.Position })
		read.Quarantined = latest(read.Quarantined, n, func(r model.Quarantined) string { return r.Position })
	}
	a.TooLateRows, a.ConflictRows, a.QuarantinedRows = int(counts.TooLate), int(counts.Conflicts), int(counts.Quarantined)
	for _, r := range read.TooLate {
		a.TooLate = append(a.TooLate, tooLateEvent(r, m.Triggers, m.OutOfOrderBound))
	}
	for _, r := range read.Conflicts {
		a.Conflicts = append(a.Conflicts, ConflictEvent{Position: r.Position, EventID: r.EventID,
			FirstFingerprint: model.FingerprintHex(r.FirstFingerprint), ConflictingFingerprint: model.FingerprintHex(r.ConflictingFingerprint),
			Payload: payload(r.Payload)})
	}
	for _, r := range read.Quarantined {
		a.Quarantined = append(a.Quarantined, QuarantinedEvent{Position: r.Position, Reason: r.Reason, Payload: payload(r.Payload)})
	}
	var said []string
	for i, table := range []string{"audit", "row counts"} {
		if errs[i] != nil {
			said = append(said, fmt.Sprintf("%s: %v", table, errs[i]))
		}
	}
	if len(said) > 0 {
		a.Error = "sink " + m.Sink.String() + ": " + strings.Join(said, "; ")
	}
	return a
}

func tooLateEvent(r model.TooLate, p triggers.Policy, bound time.Duration) TooLateEvent {
	e := TooLateEvent{Position: r.Position, EventID: r.EventID, EventTime: model.FormatTime(r.EventTime), EventTimeMs: r.EventTime,
		Reason: r.Reason, Payload: payload(r.Payload)}
	if p.Window > 0 {
		start := p.WindowStart(r.EventTime)
		end, closed := p.WindowEnd(start), p.CloseTime(start)
		late := closed + bound.Milliseconds() - r.EventTime
		e.WindowStartMs, e.WindowEndMs, e.ClosedMs, e.LateByAtLeastMs = &start, &end, &closed, &late
	}
	return e
}

// auditEvery is AuditEvery (default DefaultAuditEvery), never more often than the changelog.
func (m *Monitor) auditEvery() time.Duration {
	return max(cmp.Or(m.AuditEvery, DefaultAuditEvery), m.SinkEvery)
}
