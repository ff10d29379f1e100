package pubsub

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// A payload with CR or LF is archived with TABs instead, and every verdict
// of SPEC §3 (and the fingerprint) stays what it was for the payload.
func TestArchiveLineKeepsVerdicts(t *testing.T) {
	cfg := event.DefaultConfig()
	readAt := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, payload := range []string{
		`{"event_id":"a","event_time":"2026-11-04T10:15:00Z","user_id":"u","amount":"1"}`,
		"{\n  \"event_id\": \"a\",\r\n  \"event_time\": \"2026-11-04T10:15:00Z\",\n  \"user_id\": \"u\",\n  \"amount\": \"1\"\n}",
		"{\"event_id\":\"a\nb\",\"event_time\":\"2026-11-04T10:15:00Z\",\"user_id\":\"u\",\"amount\":\"1\"}",   // raw LF in a string
		"{\"event_id\":\"a\\\nb\",\"event_time\":\"2026-11-04T10:15:00Z\",\"user_id\":\"u\",\"amount\":\"1\"}", // backslash + LF
		"[1,\n2]",
		"\n\r\n",
		`{"event_id":"a","event_time":"2026-11-04T10:15:00Z","user_id":"u","amount":"1"}` + "\r",
	} {
		line := archiveLine([]byte(payload))
		if bytes.ContainsAny(line, "\r\n") || len(line) != len(payload) {
			t.Errorf("archiveLine(%q) = %q: still has CR/LF or changed length", payload, line)
		}
		if !strings.ContainsAny(payload, "\r\n") && string(line) != payload {
			t.Errorf("archiveLine(%q) = %q: a one-line payload must stay byte-identical", payload, line)
		}
		if rawlog.Blank([]byte(payload)) != rawlog.Blank(line) {
			t.Errorf("archiveLine(%q): blankness changed", payload)
		}
		orig, q1 := event.Parse(model.Record{Line: []byte(payload), ReadAt: readAt, WatermarkBefore: model.NoWatermark}, cfg)
		arch, q2 := event.Parse(model.Record{Line: line, ReadAt: readAt, WatermarkBefore: model.NoWatermark}, cfg)
		switch {
		case (q1 == nil) != (q2 == nil):
			t.Errorf("archiveLine(%q): verdict changed: %v vs %v", payload, q1, q2)
		case q1 != nil && q1.Reason != q2.Reason:
			t.Errorf("archiveLine(%q): reason %s became %s", payload, q1.Reason, q2.Reason)
		case q1 == nil && (orig.Fingerprint != arch.Fingerprint || orig.EventID != arch.EventID):
			t.Errorf("archiveLine(%q): event changed", payload)
		}
	}
}
