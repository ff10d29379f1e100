package event

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/model"
)

// MaxEventIDBytes is the longest accepted event_id, in unescaped UTF-8 bytes.
const MaxEventIDBytes = 256

// MaxPayloadPrefix is how much of an oversized line its quarantine row keeps.
const MaxPayloadPrefix = 1 << 10

// Parse validates one raw record against SPEC §3, in the package doc's order:
// the event, or a zero Event and the quarantine record. c must have passed
// [Config.Validate]. Parse never panics and keeps no state.
func Parse(r model.Record, c Config) (model.Event, *model.Quarantined) {
	if r.Oversized || len(r.Line) > c.MaxLine {
		return model.Event{}, oversized(r, c)
	}

	s := getScanner()
	defer putScanner(s)
	isObject, err := s.scanLine(r.Line)
	if err != nil {
		return model.Event{}, quarantine(r, model.ReasonMalformedJSON, err.Error())
	}
	if !isObject {
		return model.Event{}, quarantine(r, model.ReasonNotAnObject,
			"top-level JSON value is "+kind(trimWS(bytes.TrimPrefix(r.Line, bomUTF8)))+", want an object")
	}
	fields := s.members

	var req [len(requiredFields)][]byte
	var missing []string
	for i, name := range requiredFields {
		raw := lookup(fields, name)
		switch {
		case raw == nil:
			missing = append(missing, name)
		case isNull(raw):
			missing = append(missing, name+" (null)")
		}
		req[i] = raw
	}
	if len(missing) > 0 {
		return model.Event{}, quarantine(r, model.ReasonMissingField,
			"missing required field: "+strings.Join(missing, ", "))
	}
	idRaw, timeRaw, userRaw, amountRaw := req[0], req[1], req[2], req[3]

	eventID, err := idField(idRaw, "event_id", MaxEventIDBytes)
	if err != nil {
		return model.Event{}, quarantine(r, model.ReasonBadEventID, err.Error())
	}
	userID, err := idField(userRaw, "user_id", 0)
	if err != nil {
		return model.Event{}, quarantine(r, model.ReasonBadUserID, err.Error())
	}
	amount, err := ParseAmount(amountRaw)
	if err != nil {
		return model.Event{}, quarantine(r, model.ReasonBadAmount, err.Error())
	}
	eventTime, err := ParseEventTime(timeRaw)
	if err != nil {
		return model.Event{}, quarantine(r, model.ReasonBadEventTime, err.Error())
	}

	if limit := SatAdd(r.ReadAt, c.MaxFuture.Milliseconds()); eventTime > limit {
		return model.Event{}, quarantine(r, model.ReasonFutureEventTime, fmt.Sprintf(
			"event_time %s is more than --max-future=%v ahead of read time %s",
			model.FormatTime(eventTime), c.MaxFuture, model.FormatTime(r.ReadAt)))
	}
	if c.MaxAge > 0 && r.WatermarkBefore != model.NoWatermark {
		if bound := SatAdd(r.WatermarkBefore, -c.MaxAge.Milliseconds()); eventTime < bound {
			return model.Event{}, quarantine(r, model.ReasonTooOld, fmt.Sprintf(
				"event_time %s is more than --max-age=%v before the partition watermark %s",
				model.FormatTime(eventTime), c.MaxAge, model.FormatTime(r.WatermarkBefore)))
		}
	}

	// One allocation holds event_id, user_id and dims, which die together.
	var stack [256]byte
	buf := append(stack[:0], eventID...)
	buf = append(buf, userID...)
	dimsAt := len(buf)
	buf = appendEventDims(buf, fields, c.Dimensions)
	all := string(buf)
	ev := model.Event{
		EventID:         all[:len(eventID)],
		EventTime:       eventTime,
		UserID:          all[len(eventID):dimsAt],
		AmountMicros:    amount,
		Dims:            NoDims,
		Partition:       r.Partition,
		Position:        r.Position,
		Payload:         r.Line,
		Ref:             r.Ref,
		ReadAt:          r.ReadAt,
		WatermarkBefore: r.WatermarkBefore,
	}
	if len(c.Dimensions) > 0 {
		ev.Dims = all[dimsAt:]
	}
	ev.Fingerprint = Fingerprint(ev.EventTime, ev.UserID, ev.AmountMicros, ev.Dims)
	return ev, nil
}

// appendEventDims appends the canonical dims of an event's validated fields.
func appendEventDims(dst []byte, fields []member, dims []string) []byte {
	if len(dims) == 0 {
		return dst
	}
	// Dimension lists are short; sort a stack copy unless already sorted.
	var nameBuf [8]string
	names := dims
	if !slices.IsSorted(names) {
		names = append(nameBuf[:0], dims...)
		slices.Sort(names)
	}
	var valBuf [8][]byte
	vals := valBuf[:0]
	for _, name := range names {
		vals = append(vals, lookup(fields, name))
	}
	return appendDims(dst, names, vals)
}

// lookup returns the raw value of the member named name, or nil.
func lookup(fields []member, name string) []byte {
	for _, m := range fields {
		if string(m.key) == name {
			return m.val
		}
	}
	return nil
}

// idField reads a required id: a non-empty, non-blank JSON string without
// control characters, of at most maxLen bytes when maxLen > 0.
func idField(raw []byte, field string, maxLen int) ([]byte, error) {
	if raw[0] != '"' {
		return nil, fmt.Errorf("%s must be a string, got %s", field, kind(raw))
	}
	body := raw[1 : len(raw)-1] // validated by the scanner
	if bytes.IndexByte(body, '\\') >= 0 {
		body = unescape(nil, body)
	}
	switch {
	case len(body) == 0:
		return nil, fmt.Errorf("%s is empty", field)
	case maxLen > 0 && len(body) > maxLen:
		return nil, fmt.Errorf("%s is %d bytes, longer than %d", field, len(body), maxLen)
	case hasControl(body):
		return nil, fmt.Errorf("%s %s contains a control character", field, clip(raw))
	case len(bytes.TrimSpace(body)) == 0:
		return nil, fmt.Errorf("%s %s is blank", field, clip(raw))
	}
	return body, nil
}

// quarantine builds a rejection that keeps the whole raw line for audit.
func quarantine(r model.Record, reason, detail string) *model.Quarantined {
	return &model.Quarantined{Position: r.Position, Payload: text(r.Line), Reason: reason, Detail: detail}
}

// runeCut is b's first max bytes at most, cut before a rune.
func runeCut(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	n := max
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return b[:n]
}

// text is a payload as every sink stores it: a payload column is text (a BigQuery STRING holds
// UTF-8 only, JSON strings too), so each byte that is not UTF-8 becomes U+FFFD, as Go's JSON
// encoder does; the raw log keeps the line as it came, at the row's position.
func text(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return []byte(string([]rune(string(b))))
}

// oversized rejects a line without parsing it, copying at most
// MaxPayloadPrefix bytes cut on a UTF-8 boundary.
func oversized(r model.Record, c Config) *model.Quarantined {
	// Cut, as text, and cut again: each U+FFFD is three bytes where the raw one was one.
	prefix := runeCut(text(runeCut(r.Line, MaxPayloadPrefix)), MaxPayloadPrefix)
	detail := fmt.Sprintf("line longer than --max-line=%d bytes", c.MaxLine)
	if !r.Oversized {
		detail = fmt.Sprintf("line of %d bytes is longer than --max-line=%d", len(r.Line), c.MaxLine)
	}
	return &model.Quarantined{
		Position: r.Position,
		Payload:  bytes.Clone(prefix),
		Reason:   model.ReasonOversized,
		Detail:   detail,
	}
}

// SatAdd adds without wrapping, so extreme values cannot invert a bound.
func SatAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}
