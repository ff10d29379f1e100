package event

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/model"
)

// fuzzConfig exercises every check: dimensions (canonical values), a small
// --max-line (oversized) and --max-age (too_old).
func fuzzConfig() Config {
	c := DefaultConfig()
	c.Dimensions = []string{"region", "store"}
	c.MaxAge = 48 * time.Hour
	c.MaxLine = 512
	return c
}

func fuzzRecord(line []byte) model.Record {
	return model.Record{
		Partition:       "p0",
		Position:        "p0/f.jsonl:1",
		Line:            line,
		ReadAt:          readAt,
		WatermarkBefore: t0 - 3600_000,
	}
}

// FuzzParse checks that Parse never panics and that its verdicts hold up
// against independent implementations: encoding/json for well-formedness,
// math/big for the amount, time.Parse for RFC 3339, and CanonicalDims over a
// map for the dims. An accepted event must also survive a round trip through
// its canonical form with the same fingerprint.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00"}`,
		`{"event_id":"a2","event_time":"2026-11-04T11:15:00+01:00","user_id":"u7","amount":1e2,"region":"eu","store":1.0}`,
		`{"event_id":"a3","event_time":-1.5,"user_id":"u\u00e9","amount":"-0.000001","store":{"b":[1,2],"a":null}}`,
		`{"event_id":"a1","event_id":"a2"}`,
		`[1,"x",{"a":true}]`,
		"",
	} {
		f.Add([]byte(s))
	}
	c := fuzzConfig()
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		r := fuzzRecord(line)
		ev, q := Parse(r, c)
		if !bytes.Equal(line, orig) {
			t.Fatal("Parse modified the line")
		}
		if q != nil {
			checkQuarantine(t, r, c, ev, q)
			return
		}
		checkEvent(t, r, c, ev)
	})
}

func checkQuarantine(t *testing.T, r model.Record, c Config, ev model.Event, q *model.Quarantined) {
	t.Helper()
	if !slices.Contains(model.QuarantineReasons, q.Reason) {
		t.Fatalf("unknown reason %q", q.Reason)
	}
	if ev.EventID != "" || ev.Fingerprint != 0 || ev.Payload != nil || ev.Dims != "" {
		t.Fatalf("quarantine %s came with a non-zero event %+v", q.Reason, ev)
	}
	if q.Position != r.Position || q.Detail == "" {
		t.Fatalf("quarantine lacks position or detail: %+v", q)
	}
	if (q.Reason == model.ReasonOversized) != (len(r.Line) > c.MaxLine) {
		t.Fatalf("reason %s for a %d-byte line with --max-line=%d", q.Reason, len(r.Line), c.MaxLine)
	}
	if q.Reason == model.ReasonOversized {
		if len(q.Payload) > MaxPayloadPrefix || !bytes.HasPrefix(asText(r.Line), q.Payload) {
			t.Fatalf("oversized payload is not a prefix of at most %d bytes", MaxPayloadPrefix)
		}
		return
	}
	if !bytes.Equal(q.Payload, asText(r.Line)) {
		t.Fatal("quarantine payload is not the raw line as text")
	}
	valid := json.Valid(bytes.TrimPrefix(r.Line, bomUTF8))
	if q.Reason != model.ReasonMalformedJSON && !valid {
		t.Fatalf("reason %s for a line encoding/json finds invalid", q.Reason)
	}
	if q.Reason == model.ReasonMalformedJSON && valid {
		// Stricter than encoding/json only where the package doc says so.
		stricter := false
		for _, why := range []string{"duplicate key", "lone surrogate", "invalid UTF-8", "nesting deeper"} {
			stricter = stricter || strings.Contains(q.Detail, why)
		}
		if !stricter {
			t.Fatalf("malformed_json (%s) for a line encoding/json accepts", q.Detail)
		}
	}
}

func checkEvent(t *testing.T, r model.Record, c Config, ev model.Event) {
	t.Helper()
	// The event re-validates on its own.
	switch {
	case ev.EventID == "" || len(ev.EventID) > MaxEventIDBytes || !utf8.ValidString(ev.EventID) || hasControl(ev.EventID):
		t.Fatalf("bad EventID %q", ev.EventID)
	case ev.UserID == "" || !utf8.ValidString(ev.UserID) || hasControl(ev.UserID):
		t.Fatalf("bad UserID %q", ev.UserID)
	case ev.AmountMicros <= -AmountLimitMicros || ev.AmountMicros >= AmountLimitMicros:
		t.Fatalf("amount %d out of range", ev.AmountMicros)
	case ev.EventTime < MinEventTime || ev.EventTime > MaxEventTime:
		t.Fatalf("event time %d out of range", ev.EventTime)
	case ev.EventTime > r.ReadAt+c.MaxFuture.Milliseconds():
		t.Fatalf("event time %d accepted beyond --max-future", ev.EventTime)
	case ev.EventTime < r.WatermarkBefore-c.MaxAge.Milliseconds():
		t.Fatalf("event time %d accepted beyond --max-age", ev.EventTime)
	case ev.Fingerprint != Fingerprint(ev.EventTime, ev.UserID, ev.AmountMicros, ev.Dims):
		t.Fatal("fingerprint does not match the event's fields")
	case !bytes.Equal(ev.Payload, r.Line) || ev.Position != r.Position || ev.Partition != r.Partition ||
		ev.ReadAt != r.ReadAt || ev.WatermarkBefore != r.WatermarkBefore:
		t.Fatal("record fields not copied")
	}

	// Differential: encoding/json must read the same fields.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimPrefix(r.Line, bomUTF8), &fields); err != nil {
		t.Fatalf("accepted a line encoding/json rejects: %v", err)
	}
	var id, user string
	if json.Unmarshal(fields["event_id"], &id) != nil || id != ev.EventID {
		t.Fatalf("event_id %q, encoding/json reads %q", ev.EventID, id)
	}
	if json.Unmarshal(fields["user_id"], &user) != nil || user != ev.UserID {
		t.Fatalf("user_id %q, encoding/json reads %q", ev.UserID, user)
	}
	amountText := string(fields["amount"])
	if strings.HasPrefix(amountText, `"`) {
		if err := json.Unmarshal(fields["amount"], &amountText); err != nil {
			t.Fatal(err)
		}
	}
	want, ok := new(big.Rat).SetString(amountText)
	if !ok {
		t.Fatalf("accepted amount %q that math/big cannot read", amountText)
	}
	if got := new(big.Rat).SetFrac64(ev.AmountMicros, MicrosPerUnit); got.Cmp(want) != 0 {
		t.Fatalf("amount %q parsed as %d micros, want %s", amountText, ev.AmountMicros, want.FloatString(9))
	}
	var ts string
	if json.Unmarshal(fields["event_time"], &ts) == nil {
		if tt, err := time.Parse(time.RFC3339Nano, ts); err == nil && tt.UnixMilli() != ev.EventTime {
			t.Fatalf("event_time %q parsed as %d, time.Parse says %d", ts, ev.EventTime, tt.UnixMilli())
		}
	}
	dims, err := CanonicalDims(fields, c.Dimensions)
	if err != nil || dims != ev.Dims {
		t.Fatalf("dims %s, CanonicalDims over encoding/json's map gives %s, %v", ev.Dims, dims, err)
	}

	// Round trip: the canonical form of the event parses to the same event.
	var b strings.Builder
	idJSON, _ := json.Marshal(ev.EventID)
	userJSON, _ := json.Marshal(ev.UserID)
	b.WriteString(`{"event_id":` + string(idJSON) + `,"event_time":` + strconv.FormatInt(ev.EventTime, 10) +
		`,"user_id":` + string(userJSON) + `,"amount":"` + model.FormatMicros(ev.AmountMicros) + `"`)
	var dimFields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.Dims), &dimFields); err != nil {
		t.Fatalf("dims %s is not a JSON object: %v", ev.Dims, err)
	}
	for _, name := range c.Dimensions {
		b.WriteString(`,` + strconv.Quote(name) + `:` + string(dimFields[name]))
	}
	b.WriteString(`}`)
	c2 := c
	c2.MaxLine = DefaultMaxLine
	ev2, q2 := Parse(fuzzRecord([]byte(b.String())), c2)
	if q2 != nil {
		t.Fatalf("canonical form %s quarantined: %s: %s", b.String(), q2.Reason, q2.Detail)
	}
	if ev2.EventID != ev.EventID || ev2.UserID != ev.UserID || ev2.EventTime != ev.EventTime ||
		ev2.AmountMicros != ev.AmountMicros || ev2.Dims != ev.Dims || ev2.Fingerprint != ev.Fingerprint {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, ev2)
	}
}
