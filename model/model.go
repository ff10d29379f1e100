// Package model holds the data types that flow through the pipeline and into
// the sinks: raw records, validated events, audit records and versioned
// snapshot rows. It has no behaviour beyond small helpers, so every other
// package (plain-Go rules, Beam transforms, sinks, reconcile) shares one
// vocabulary.
package model

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"
)

// NoWatermark marks a record whose partition watermark is unknown (no valid
// event seen yet, or a source that does not track one).
const NoWatermark int64 = math.MinInt64

// Record is one raw input line as read from a source, before validation.
type Record struct {
	// Partition names the source partition (a subfolder, or "pubsub").
	Partition string
	// Position is the stable source position: "<partition>/<file>:<line>" or
	// "pubsub:<message_id>". Audit rows are keyed by it.
	Position string
	// Line is the raw payload. For an oversized line it holds a prefix only.
	Line []byte
	// Ref is where Line lies in the raw log (the zero LineRef: nowhere, as
	// for a record built by hand).
	Ref LineRef
	// Oversized is set by the source when the line exceeded --max-line; Line
	// then holds only a prefix and the record is quarantined.
	Oversized bool
	// ReadAt is the processing time (epoch ms) at which the source read it.
	ReadAt int64
	// WatermarkBefore is the partition watermark (epoch ms) just before this
	// record, or NoWatermark. It decides rule (a) of the too-late gate.
	WatermarkBefore int64
	// Valid and Rejected are validation's verdict, set by the source's
	// stamper (rawlog.Stamper.StampRecord), which validates every line anyway (only a valid event time
	// advances a partition watermark), so that no line is parsed twice:
	// Valid is the event of a good line (its Payload is Line), Rejected the
	// quarantine row of a bad one. Both nil: not validated yet (a record
	// built by hand); validation then parses it.
	Valid    *Event
	Rejected *Quarantined
}

// Event is a validated purchase event.
type Event struct {
	EventID string
	// EventTime is epoch milliseconds, UTC (finer digits truncated).
	EventTime int64
	UserID    string
	// AmountMicros is the exact amount in millionths of the currency unit.
	AmountMicros int64
	// Dims is the canonical JSON object of the configured dimensions
	// (sorted keys, "{}" when none).
	Dims string
	// Fingerprint is the canonical business-content fingerprint.
	Fingerprint uint64
	Partition   string
	Position    string
	// Payload is the raw line, kept for audit outputs. It is dropped where
	// the event enters the dedup step when Ref says where the raw log
	// holds it: the few events that become audit rows read it back there
	// (transforms.Payloads), the others never carry it through the shuffle.
	Payload []byte
	// Ref is where the line lies in the raw log (zero: nowhere; the payload
	// then travels with the event).
	Ref             LineRef
	ReadAt          int64
	WatermarkBefore int64
	// AfterEnd is set by the watermark gate when the event was judged after
	// the pipeline watermark had passed its window_end: it is late data.
	AfterEnd bool
	// PipelineWatermark is the pipeline watermark as the watermark gate knew
	// it when it let the event through (its latest fired boundary timer;
	// NoWatermark before any): the dedup shards forget ids by it.
	PipelineWatermark int64
}

// LineRef is where a record's line lies in the raw log: the file as the
// reader opened it (a local path, or a gs:// or s3:// object that every
// worker reaches through Beam's filesystem) and the byte range of the line's
// content (without its "\n" or a trailing "\r"). Raw-log files are
// immutable once they appear (SPEC §6), so the range reads back the very
// bytes the record was judged on, on any worker and after any retry
// (issue #26: the raw line no longer travels into the dedup step with every
// event). The zero LineRef names no file.
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
	// Detail is a human-readable explanation (not part of the key).
	Detail string
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
	// Ref is where the raw log holds the payload, for a record whose
	// Payload was dropped before the dedup step (see Event.Payload).
	Ref LineRef
}

// Conflict is a copy of an event_id whose payload fingerprint differs from the
// first counted copy.
type Conflict struct {
	Position               string
	EventID                string
	FirstFingerprint       uint64
	ConflictingFingerprint uint64
	Payload                []byte
	// Ref: see TooLate.Ref.
	Ref LineRef
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

func (s ResultState) String() string {
	switch s {
	case Early:
		return "EARLY"
	case OnTime:
		return "ON_TIME"
	case Late:
		return "LATE"
	case Final:
		return "FINAL"
	}
	return "UNKNOWN"
}

// ParseResultState is the inverse of String.
func ParseResultState(s string) (ResultState, error) {
	switch s {
	case "EARLY":
		return Early, nil
	case "ON_TIME":
		return OnTime, nil
	case "LATE":
		return Late, nil
	case "FINAL":
		return Final, nil
	}
	return StateUnknown, fmt.Errorf("unknown result_state %q", s)
}

// Row is one versioned snapshot of a window and dimension key: always a
// complete total, never a delta.
type Row struct {
	WindowStart   int64 // epoch ms
	WindowEnd     int64 // epoch ms
	Dims          string
	RevenueMicros int64
	EventCount    int64
	Revision      int64
	State         ResultState
	// Writer is "stream" or "reconcile:<run_id>".
	Writer string
}

// Key identifies the row's key in the tables.
func (r Row) Key() string { return FormatTime(r.WindowStart) + " " + r.Dims }

// CompareRows orders rows by key (window_start, then dims), then revision:
// the order a key's snapshots are applied and listed in.
func CompareRows(a, b Row) int {
	if a.WindowStart != b.WindowStart {
		return cmp.Compare(a.WindowStart, b.WindowStart)
	}
	if c := strings.Compare(a.Dims, b.Dims); c != 0 {
		return c
	}
	return cmp.Compare(a.Revision, b.Revision)
}

// FormatTime renders epoch milliseconds as RFC 3339 UTC, with milliseconds only
// when they are not zero (window bounds render as 2026-11-04T10:00:00Z).
func FormatTime(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 == 0 {
		return t.Format(time.RFC3339)
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// FormatMicros renders an exact amount with six fractional digits.
func FormatMicros(m int64) string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-m) // also right for MinInt64 through two's complement
	}
	s := fmt.Sprintf("%d.%06d", u/1_000_000, u%1_000_000)
	if neg {
		return "-" + s
	}
	return s
}

// EventBatch is a bundle's worth of events for one dedup shard: the dedup
// stage reads and writes its state once per batch rather than once per event.
type EventBatch struct {
	Events []Event
	// Windows announces window starts to the shard, events or not: every
	// shard arms the end and close timers of every window, so that rule (b)
	// of the too-late gate does not depend on which ids a shard holds.
	Windows []int64
}

// Delta is a partial aggregate of one (window, dims) key, pre-combined per
// bundle before the revision step, or an EARLY tick (Tick set, zero sums).
type Delta struct {
	RevenueMicros int64
	Count         int64
	// AfterEnd is set when every event in it was judged after the watermark
	// had passed its window_end.
	AfterEnd bool
	// Tick marks an early-refresh signal rather than data.
	Tick bool
}
