// Package model holds the data types that flow through the pipeline into the
// sinks: records, events, audit records, snapshot rows.
package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// NoWatermark marks an unknown partition watermark.
const NoWatermark int64 = math.MinInt64

// Record is one raw input line as read from a source, before validation.
type Record struct {
	// Partition names the source partition (a subfolder, or "pubsub").
	Partition string
	// Position ("<partition>/<file>:<line>" or "pubsub:<id>") keys audit rows.
	Position string
	// Line is the raw payload (only a prefix when Oversized).
	Line []byte
	// Ref is where Line lies in the raw log (zero: nowhere).
	Ref LineRef
	// Oversized says the line exceeded --max-line.
	Oversized bool
	// ReadAt is the processing time (epoch ms) the source read it at.
	ReadAt int64
	// WatermarkBefore is the partition watermark just before it (rule (a)).
	WatermarkBefore int64
	// Valid and Rejected are the source's verdict (both nil: built by hand).
	Valid    *Event
	Rejected *Quarantined
}

// Event is a validated purchase event.
type Event struct {
	EventID string
	// EventTime is epoch milliseconds, UTC (finer digits truncated).
	EventTime int64
	// UserID and ReadAt do not pass transforms.Admit: the fingerprint holds
	// the user, Admit's delay counters the arrival.
	UserID string
	// AmountMicros is the exact amount in millionths of the currency unit.
	AmountMicros int64
	// Dims is the canonical JSON object of the dimensions ("{}" when none).
	Dims string
	// Fingerprint is the canonical business-content fingerprint.
	Fingerprint uint64
	Partition   string
	Position    string
	// Payload is the raw line, dropped before the dedup shuffle when Ref is
	// set (transforms.Payloads reads it back).
	Payload         []byte
	Ref             LineRef
	ReadAt          int64
	WatermarkBefore int64
	// AfterEnd says the watermark gate judged it after window_end: late data.
	AfterEnd bool
	// PipelineWatermark is the watermark the gate knew (dedup forgets by it).
	PipelineWatermark int64
}

// LineRef is where a line lies in the raw (immutable, SPEC §6) log: the file
// and the byte range without the line end. The zero LineRef names no file.
type LineRef struct {
	Path   string
	Offset int64
	Length int
}

// IsZero reports whether the ref names no file.
func (r LineRef) IsZero() bool { return r.Path == "" }

// FingerprintHex renders a fingerprint the way audit tables store it.
func FingerprintHex(fp uint64) string { return fmt.Sprintf("%016x", fp) }

// Quarantine reasons (SPEC §3).
const (
	ReasonMalformedJSON   = "malformed_json"
	ReasonNotAnObject     = "not_an_object"
	ReasonMissingField    = "missing_field"
	ReasonBadEventID      = "bad_event_id"
	ReasonBadUserID       = "bad_user_id"
	ReasonBadAmount       = "bad_amount"
	ReasonBadEventTime    = "bad_event_time"
	ReasonFutureEventTime = "future_event_time"
	ReasonTooOld          = "too_old"
	ReasonOversized       = "oversized"
)

// QuarantineReasons lists every reason, in SPEC order.
var QuarantineReasons = []string{
	ReasonMalformedJSON, ReasonNotAnObject, ReasonMissingField, ReasonBadEventID,
	ReasonBadUserID, ReasonBadAmount, ReasonBadEventTime, ReasonFutureEventTime,
	ReasonTooOld, ReasonOversized,
}

// Quarantined is a record rejected by validation.
type Quarantined struct {
	Position string
	Payload  []byte
	Reason   string
	Detail   string // human-readable, not part of the key
}

// ReasonWindowClosed is the only too-late reason.
const ReasonWindowClosed = "window_closed"

// TooLate is a valid event whose window had closed when it was judged.
type TooLate struct {
	Position  string
	EventID   string
	EventTime int64
	Payload   []byte
	Reason    string
	Ref       LineRef // see Event.Payload
}

// Conflict is a copy of an event_id with another fingerprint than the counted one.
type Conflict struct {
	Position               string
	EventID                string
	FirstFingerprint       uint64
	ConflictingFingerprint uint64
	Payload                []byte
	Ref                    LineRef // see Event.Payload
}

// ResultState is the finality of a snapshot row.
type ResultState uint8

const (
	StateUnknown ResultState = iota
	Early
	OnTime
	Late
	Final
)

// ResultStates are the states of a row, in lifecycle order.
var ResultStates = []ResultState{Early, OnTime, Late, Final}

var stateNames = [...]string{"UNKNOWN", "EARLY", "ON_TIME", "LATE", "FINAL"}

func (s ResultState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "UNKNOWN"
}

// ParseResultState is the inverse of String.
func ParseResultState(s string) (ResultState, error) {
	if i := slices.Index(stateNames[:], s); i > 0 {
		return ResultState(i), nil
	}
	return StateUnknown, fmt.Errorf("unknown result_state %q", s)
}

// Row is one versioned snapshot (a complete total) of a window and dims key.
type Row struct {
	WindowStart   int64 // epoch ms
	WindowEnd     int64 // epoch ms
	Dims          string
	RevenueMicros int64
	EventCount    int64
	Revision      int64
	State         ResultState
	Writer        string // "stream" or ReconcileWriter + run_id
}

// ReconcileWriter begins the Writer of a reconcile correction
// ("reconcile:<run_id>"), the one writer SPEC §4 allows to lower a count.
const ReconcileWriter = "reconcile:"

// ByReconcile reports a reconcile correction.
func (r Row) ByReconcile() bool { return strings.HasPrefix(r.Writer, ReconcileWriter) }

// Key identifies the row's key in the tables.
func (r Row) Key() string { return FormatTime(r.WindowStart) + " " + r.Dims }

// CompareRows orders rows by window_start, dims, then revision.
func CompareRows(a, b Row) int {
	return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), strings.Compare(a.Dims, b.Dims), cmp.Compare(a.Revision, b.Revision))
}

// FormatTime renders epoch ms as RFC 3339 UTC, with milliseconds when non-zero.
func FormatTime(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 == 0 {
		return t.Format(time.RFC3339)
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// FormatMicros renders an exact amount with six fractional digits.
func FormatMicros(m int64) string {
	sign, u := "", uint64(m)
	if m < 0 {
		sign, u = "-", -u // also right for MinInt64 through two's complement
	}
	return fmt.Sprintf("%s%d.%06d", sign, u/1_000_000, u%1_000_000)
}

// EventBatch is a bundle's events for one gate key or dedup shard (one state
// access): Events decoded, or Coded and N as the batch's coder left them for
// a step that may pass them on unread.
type EventBatch struct {
	Events []Event
	Coded  []byte
	N      int
	// Windows announces window starts, so every gate key arms their timers.
	Windows []int64
	// Spans (the events' window starts) and Since (the earliest event's
	// partition watermark: the batch's timestamp) are what the gate needs.
	Spans []int64
	Since int64
	// Watermark is the gate's when it passed the events, stamped on each
	// (Event.PipelineWatermark, AfterEnd).
	Watermark int64
}

// Delta is a per-bundle partial aggregate of a (window, dims) key, or a Tick.
type Delta struct {
	RevenueMicros int64
	Count         int64
	AfterEnd      bool // every event in it was judged after window_end
	Tick          bool // an early-refresh signal, not data
}
