package event

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/model"
)

var (
	// readAt is the processing time of every test record.
	readAt = utcMs(2026, 11, 4, 10, 20, 0, 0)
	// t0 is the SPEC §3 example event time, 2026-11-04T10:15:00Z.
	t0 = utcMs(2026, 11, 4, 10, 15, 0, 0)
)

const testPosition = "p0/2026-11-04.jsonl:7"

func rec(line string) model.Record {
	return model.Record{
		Partition:       "p0",
		Position:        testPosition,
		Line:            []byte(line),
		ReadAt:          readAt,
		WatermarkBefore: model.NoWatermark,
	}
}

// line builds an event line from the four required fields, given as raw JSON
// tokens ("" leaves the field out), plus extra raw members.
func line(id, ts, user, amount string, extra ...string) string {
	var parts []string
	for _, f := range [][2]string{{"event_id", id}, {"event_time", ts}, {"user_id", user}, {"amount", amount}} {
		if f[1] != "" {
			parts = append(parts, `"`+f[0]+`":`+f[1])
		}
	}
	return "{" + strings.Join(append(parts, extra...), ",") + "}"
}

// ok is a valid line with the given amount token.
func okAmount(amount string) string { return line(`"a1"`, `"2026-11-04T10:15:00Z"`, `"u7"`, amount) }

// okTime is a valid line with the given event_time token.
func okTime(ts string) string { return line(`"a1"`, ts, `"u7"`, `"100.00"`) }

func ms(v int64) string { return strconv.FormatInt(v, 10) }

func TestParse(t *testing.T) {
	spec := `{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00"}`
	id256 := strings.Repeat("x", 256)
	type want struct {
		reason string // "" means accepted
		detail string // substring of Quarantined.Detail
		id     string
		time   int64
		user   string
		amount int64
		dims   string
	}
	accept := func(id string, time int64, user string, amount int64, dims string) want {
		return want{id: id, time: time, user: user, amount: amount, dims: dims}
	}
	reject := func(reason, detail string) want { return want{reason: reason, detail: detail} }
	maxAge := func(d time.Duration) func(*Config) { return func(c *Config) { c.MaxAge = d } }
	watermark := func(w int64) func(*model.Record) { return func(r *model.Record) { r.WatermarkBefore = w } }
	tests := []struct {
		name string
		line string
		rec  func(*model.Record)
		cfg  func(*Config)
		want want
	}{
		// Accepted.
		{name: "SPEC example", line: spec, want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "JSON number amount 100.10", line: okAmount(`100.10`), want: accept("a1", t0, "u7", 100_100_000, "{}")},
		{name: "exponent amount", line: okAmount(`1.5E-3`), want: accept("a1", t0, "u7", 1_500, "{}")},
		{name: "refund", line: okAmount(`"-25.50"`), want: accept("a1", t0, "u7", -25_500_000, "{}")},
		{name: "zero amount", line: okAmount(`0`), want: accept("a1", t0, "u7", 0, "{}")},
		{name: "6 fractional digits", line: okAmount(`"0.000001"`), want: accept("a1", t0, "u7", 1, "{}")},
		{name: "trailing zeros beyond 6", line: okAmount(`"1.2300000"`), want: accept("a1", t0, "u7", 1_230_000, "{}")},
		{name: "amount just below 1e12", line: okAmount(`"999999999999.999999"`), want: accept("a1", t0, "u7", 999_999_999_999_999_999, "{}")},
		{name: "negative just above -1e12", line: okAmount(`-999999999999.999999`), want: accept("a1", t0, "u7", -999_999_999_999_999_999, "{}")},
		{name: "offset +05:30", line: okTime(`"2026-11-04T15:45:00+05:30"`), want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "offset -08:00", line: okTime(`"2026-11-04T02:15:00-08:00"`), want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "epoch ms number", line: okTime(ms(t0)), want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "epoch ms string", line: okTime(`"` + ms(t0) + `"`), want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "sub-ms truncated", line: okTime(`"2026-11-04T10:15:00.123999Z"`), want: accept("a1", t0+123, "u7", 100_000_000, "{}")},
		{name: "pre-1970 sub-ms floored", line: okTime(`"1969-12-31T23:59:59.9995Z"`), want: accept("a1", -1, "u7", 100_000_000, "{}")},
		{name: "negative epoch fraction floored", line: okTime(`-1.5`), want: accept("a1", -2, "u7", 100_000_000, "{}")},
		{name: "event_id 256 bytes", line: line(`"`+id256+`"`, ms(t0), `"u7"`, `1`), want: accept(id256, t0, "u7", 1_000_000, "{}")},
		{name: "event_id escapes", line: line(`"a\u0031\/x"`, ms(t0), `"u\u00e9"`, `1`), want: accept("a1/x", t0, "ué", 1_000_000, "{}")},
		{name: "unicode ids", line: line(`"注文-1"`, ms(t0), `"ユーザー"`, `1`), want: accept("注文-1", t0, "ユーザー", 1_000_000, "{}")},
		{name: "escaped key", line: `{"event\u005fid":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00"}`, want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "extra fields ignored", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"meta":{"k":[1,2,{"x":null}]}`, `"tags":["a"]`), want: accept("a1", t0, "u7", 1_000_000, "{}")},
		{name: "whitespace, CRLF and field order", line: " {\t\"amount\" : 1 ,\n \"user_id\":\"u7\", \"event_time\":" + ms(t0) + ", \"event_id\":\"a1\" }\r", want: accept("a1", t0, "u7", 1_000_000, "{}")},
		{name: "byte order mark", line: "\xEF\xBB\xBF" + spec, want: accept("a1", t0, "u7", 100_000_000, "{}")},
		{name: "dims sorted, missing null", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"region":"eu"`, `"platform":"ios"`),
			cfg:  func(c *Config) { c.Dimensions = []string{"region", "sku", "platform"} },
			want: accept("a1", t0, "u7", 1_000_000, `{"platform":"ios","region":"eu","sku":null}`)},
		{name: "dims canonical values", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"store":1.0`, `"city":"M\u00fcnchen"`, `"o":{"b":1, "a":2}`),
			cfg:  func(c *Config) { c.Dimensions = []string{"store", "city", "o"} },
			want: accept("a1", t0, "u7", 1_000_000, `{"city":"München","o":{"a":2,"b":1},"store":1}`)},
		{name: "many dims", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"d5":5`, `"d1":1`),
			cfg:  func(c *Config) { c.Dimensions = []string{"d9", "d8", "d7", "d6", "d5", "d4", "d3", "d2", "d1", "d0"} },
			want: accept("a1", t0, "u7", 1_000_000, `{"d0":null,"d1":1,"d2":null,"d3":null,"d4":null,"d5":5,"d6":null,"d7":null,"d8":null,"d9":null}`)},
		{name: "line exactly max-line", line: spec, cfg: func(c *Config) { c.MaxLine = len(spec) }, want: accept("a1", t0, "u7", 100_000_000, "{}")},

		// oversized: checked first, before the JSON is touched.
		{name: "oversized flag", line: `{"event_id":"a1","event_t`, rec: func(r *model.Record) { r.Oversized = true }, want: reject(model.ReasonOversized, "longer than --max-line")},
		{name: "longer than max-line", line: spec, cfg: func(c *Config) { c.MaxLine = len(spec) - 1 }, want: reject(model.ReasonOversized, "longer than --max-line")},
		{name: "oversized garbage", line: "\x00\xff not json", cfg: func(c *Config) { c.MaxLine = 4 }, want: reject(model.ReasonOversized, "--max-line=4")},

		// malformed_json.
		{name: "empty line", line: "", want: reject(model.ReasonMalformedJSON, "empty line")},
		{name: "whitespace line", line: " \t\r", want: reject(model.ReasonMalformedJSON, "empty line")},
		{name: "truncated", line: `{"event_id":"a1"`, want: reject(model.ReasonMalformedJSON, "end of line")},
		{name: "not JSON", line: `event_id=a1`, want: reject(model.ReasonMalformedJSON, "expected a value")},
		{name: "two objects", line: spec + spec, want: reject(model.ReasonMalformedJSON, "after the JSON value")},
		{name: "trailing comma", line: `{"event_id":"a1",}`, want: reject(model.ReasonMalformedJSON, "expected a string key")},
		{name: "single quotes", line: `{'event_id':'a1'}`, want: reject(model.ReasonMalformedJSON, "expected a string key")},
		{name: "NaN literal", line: okAmount(`NaN`), want: reject(model.ReasonMalformedJSON, "expected a value")},
		{name: "leading zero number", line: okAmount(`0100`), want: reject(model.ReasonMalformedJSON, "expected ',' or '}'")},
		{name: "plus number", line: okAmount(`+1`), want: reject(model.ReasonMalformedJSON, "expected a value")},
		{name: "duplicate key", line: `{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00","amount":"120.00"}`, want: reject(model.ReasonMalformedJSON, `duplicate key "amount"`)},
		{name: "duplicate key via escape", line: `{"event_id":"a1","event\u005fid":"a2"}`, want: reject(model.ReasonMalformedJSON, `duplicate key "event_id"`)},
		{name: "duplicate nested key", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"meta":{"k":1,"k":2}`), want: reject(model.ReasonMalformedJSON, `duplicate key "k"`)},
		{name: "invalid UTF-8", line: line("\"a\xff1\"", ms(t0), `"u7"`, `1`), want: reject(model.ReasonMalformedJSON, "invalid UTF-8")},
		{name: "lone surrogate", line: line(`"a\ud800"`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonMalformedJSON, "lone surrogate")},
		{name: "raw control char", line: line("\"a\t1\"", ms(t0), `"u7"`, `1`), want: reject(model.ReasonMalformedJSON, "control character")},
		{name: "bad escape", line: line(`"a\x41"`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonMalformedJSON, "invalid escape")},
		{name: "too deep", line: line(`"a1"`, ms(t0), `"u7"`, `1`, `"x":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)), want: reject(model.ReasonMalformedJSON, "nesting deeper than 128")},
		{name: "BOM not at start", line: " \xEF\xBB\xBF" + spec, want: reject(model.ReasonMalformedJSON, "expected a value")},

		// not_an_object.
		{name: "array", line: `[` + spec + `]`, want: reject(model.ReasonNotAnObject, "is an array")},
		{name: "string", line: `"a1"`, want: reject(model.ReasonNotAnObject, "is a string")},
		{name: "number", line: ` 42 `, want: reject(model.ReasonNotAnObject, "is a number")},
		{name: "null", line: `null`, want: reject(model.ReasonNotAnObject, "is null")},
		{name: "boolean", line: `true`, want: reject(model.ReasonNotAnObject, "is a boolean")},

		// missing_field.
		{name: "missing event_id", line: line("", ms(t0), `"u7"`, `1`), want: reject(model.ReasonMissingField, "missing required field: event_id")},
		{name: "missing event_time", line: line(`"a1"`, "", `"u7"`, `1`), want: reject(model.ReasonMissingField, "missing required field: event_time")},
		{name: "missing user_id", line: line(`"a1"`, ms(t0), "", `1`), want: reject(model.ReasonMissingField, "missing required field: user_id")},
		{name: "missing amount", line: line(`"a1"`, ms(t0), `"u7"`, ""), want: reject(model.ReasonMissingField, "missing required field: amount")},
		{name: "null amount", line: line(`"a1"`, ms(t0), `"u7"`, `null`), want: reject(model.ReasonMissingField, "missing required field: amount (null)")},
		{name: "empty object", line: `{}`, want: reject(model.ReasonMissingField, "missing required field: event_id, event_time, user_id, amount")},
		{name: "case matters", line: `{"Event_ID":"a1","event_time":1,"user_id":"u7","amount":1}`, want: reject(model.ReasonMissingField, "missing required field: event_id")},
		{name: "nested is not top-level", line: `{"e":{"event_id":"a1"},"event_time":1,"user_id":"u7","amount":1}`, want: reject(model.ReasonMissingField, "missing required field: event_id")},
		{name: "missing beats bad", line: line(`17`, ms(t0), `"u7"`, ""), want: reject(model.ReasonMissingField, "amount")},

		// bad_event_id.
		{name: "event_id number", line: line(`17`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "event_id must be a string, got a number")},
		{name: "event_id array", line: line(`["a1"]`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "got an array")},
		{name: "event_id empty", line: line(`""`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "event_id is empty")},
		{name: "event_id 257 bytes", line: line(`"`+id256+`y"`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "257 bytes, longer than 256")},
		{name: "event_id 257 bytes unescaped", line: line(`"`+strings.Repeat(`\u00e9`, 128)+`y"`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "257 bytes")},
		{name: "event_id blank", line: line(`"   "`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "blank")},
		{name: "event_id control char", line: line(`"a\u00001"`, ms(t0), `"u7"`, `1`), want: reject(model.ReasonBadEventID, "control character")},
		{name: "bad event_id before bad amount", line: line(`17`, ms(t0), `"u7"`, `"x"`), want: reject(model.ReasonBadEventID, "")},

		// bad_user_id.
		{name: "user_id number", line: line(`"a1"`, ms(t0), `7`, `1`), want: reject(model.ReasonBadUserID, "user_id must be a string, got a number")},
		{name: "user_id empty", line: line(`"a1"`, ms(t0), `""`, `1`), want: reject(model.ReasonBadUserID, "user_id is empty")},
		{name: "user_id object", line: line(`"a1"`, ms(t0), `{"id":7}`, `1`), want: reject(model.ReasonBadUserID, "got an object")},
		{name: "user_id newline", line: line(`"a1"`, ms(t0), `"u\n7"`, `1`), want: reject(model.ReasonBadUserID, "control character")},
		{name: "bad user_id before bad amount", line: line(`"a1"`, ms(t0), `false`, `"x"`), want: reject(model.ReasonBadUserID, "")},

		// bad_amount.
		{name: "7 fractional digits", line: okAmount(`"1.0000001"`), want: reject(model.ReasonBadAmount, "more than 6 fractional digits")},
		{name: "amount 1e12", line: okAmount(`"1000000000000"`), want: reject(model.ReasonBadAmount, "less than 1e12")},
		{name: "amount -1e12", line: okAmount(`-1e12`), want: reject(model.ReasonBadAmount, "less than 1e12")},
		{name: "amount NaN string", line: okAmount(`"NaN"`), want: reject(model.ReasonBadAmount, "not a decimal number")},
		{name: "amount Infinity string", line: okAmount(`"Infinity"`), want: reject(model.ReasonBadAmount, "not a decimal number")},
		{name: "amount leading plus", line: okAmount(`"+1"`), want: reject(model.ReasonBadAmount, "not a decimal number")},
		{name: "amount hex", line: okAmount(`"0x10"`), want: reject(model.ReasonBadAmount, "not a decimal number")},
		{name: "amount spaces", line: okAmount(`" 1.00"`), want: reject(model.ReasonBadAmount, "not a decimal number")},
		{name: "amount boolean", line: okAmount(`true`), want: reject(model.ReasonBadAmount, "got a boolean")},
		{name: "amount object", line: okAmount(`{"value":"1.00","currency":"EUR"}`), want: reject(model.ReasonBadAmount, "got an object")},
		{name: "bad amount before bad time", line: line(`"a1"`, `"soon"`, `"u7"`, `"x"`), want: reject(model.ReasonBadAmount, "")},

		// bad_event_time.
		{name: "date only", line: okTime(`"2026-11-04"`), want: reject(model.ReasonBadEventTime, "not RFC 3339")},
		{name: "no such date", line: okTime(`"2026-02-30T10:15:00Z"`), want: reject(model.ReasonBadEventTime, "no such date")},
		{name: "no offset", line: okTime(`"2026-11-04T10:15:00"`), want: reject(model.ReasonBadEventTime, "missing time zone offset")},
		{name: "time boolean", line: okTime(`true`), want: reject(model.ReasonBadEventTime, "got a boolean")},
		{name: "time out of range", line: okTime(`1e300`), want: reject(model.ReasonBadEventTime, "outside years 0000-9999")},
		{name: "bad time before future", line: okTime(`"9999-99-99T00:00:00Z"`), want: reject(model.ReasonBadEventTime, "")},

		// future_event_time: more than MaxFuture ahead of ReadAt.
		{name: "exactly max-future ahead", line: okTime(ms(readAt + 10*60*1000)), want: accept("a1", readAt+10*60*1000, "u7", 100_000_000, "{}")},
		{name: "1 ms past max-future", line: okTime(ms(readAt + 10*60*1000 + 1)), want: reject(model.ReasonFutureEventTime, "more than --max-future=10m0s ahead of read time 2026-11-04T10:20:00Z")},
		{name: "sub-ms past max-future is truncated", line: okTime(`"2026-11-04T10:30:00.000999Z"`), want: accept("a1", readAt+10*60*1000, "u7", 100_000_000, "{}")},
		{name: "custom max-future", line: okTime(ms(readAt + 1001)), cfg: func(c *Config) { c.MaxFuture = time.Second }, want: reject(model.ReasonFutureEventTime, "--max-future=1s")},
		{name: "far future", line: okTime(`"9999-12-31T23:59:59Z"`), want: reject(model.ReasonFutureEventTime, "")},
		{name: "future checked before too_old", line: okTime(ms(readAt + 11*60*1000)), cfg: maxAge(time.Hour), rec: watermark(readAt + 24*3600*1000), want: reject(model.ReasonFutureEventTime, "")},

		// too_old: against the partition watermark, only when configured.
		{name: "exactly max-age before watermark", line: okTime(ms(t0 - 3600*1000)), cfg: maxAge(time.Hour), rec: watermark(t0), want: accept("a1", t0-3600*1000, "u7", 100_000_000, "{}")},
		{name: "1 ms older than max-age", line: okTime(ms(t0 - 3600*1000 - 1)), cfg: maxAge(time.Hour), rec: watermark(t0), want: reject(model.ReasonTooOld, "more than --max-age=1h0m0s before the partition watermark 2026-11-04T10:15:00Z")},
		{name: "max-age off", line: okTime(`"1970-01-01T00:00:00Z"`), rec: watermark(t0), want: accept("a1", 0, "u7", 100_000_000, "{}")},
		{name: "no watermark yet", line: okTime(`"1970-01-01T00:00:00Z"`), cfg: maxAge(time.Hour), want: accept("a1", 0, "u7", 100_000_000, "{}")},
		{name: "too old ancient", line: okTime(`"0001-01-01T00:00:00Z"`), cfg: maxAge(time.Millisecond), rec: watermark(0), want: reject(model.ReasonTooOld, "")},
		{name: "watermark far in the past", line: okTime(ms(MinEventTime)), cfg: maxAge(time.Hour), rec: watermark(MinEventTime + 1), want: accept("a1", MinEventTime, "u7", 100_000_000, "{}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rec(tt.line)
			if tt.rec != nil {
				tt.rec(&r)
			}
			c := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&c)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("test config: %v", err)
			}
			ev, q := Parse(r, c)
			if tt.want.reason != "" {
				if q == nil {
					t.Fatalf("Parse(%q) = event %+v, want quarantine %s", tt.line, ev, tt.want.reason)
				}
				if q.Reason != tt.want.reason || !strings.Contains(q.Detail, tt.want.detail) {
					t.Fatalf("Parse(%q) quarantined %s: %q\n want %s: ...%q...", tt.line, q.Reason, q.Detail, tt.want.reason, tt.want.detail)
				}
				if q.Position != testPosition {
					t.Errorf("Quarantined.Position = %q, want %q", q.Position, testPosition)
				}
				if q.Reason != model.ReasonOversized && !bytes.Equal(q.Payload, asText(r.Line)) {
					t.Errorf("Quarantined.Payload = %q, want the raw line as text", q.Payload)
				}
				if !reflect.DeepEqual(ev, model.Event{}) {
					t.Errorf("Parse returned a quarantine and a non-zero event %+v", ev)
				}
				return
			}
			if q != nil {
				t.Fatalf("Parse(%q) quarantined %s: %s; want an event", tt.line, q.Reason, q.Detail)
			}
			w := tt.want
			if ev.EventID != w.id || ev.EventTime != w.time || ev.UserID != w.user || ev.AmountMicros != w.amount || ev.Dims != w.dims {
				t.Fatalf("Parse(%q) =\n {id:%q time:%d user:%q amount:%d dims:%s}\nwant\n {id:%q time:%d user:%q amount:%d dims:%s}",
					tt.line, ev.EventID, ev.EventTime, ev.UserID, ev.AmountMicros, ev.Dims, w.id, w.time, w.user, w.amount, w.dims)
			}
			if want := Fingerprint(ev.EventTime, ev.UserID, ev.AmountMicros, ev.Dims); ev.Fingerprint != want {
				t.Errorf("Event.Fingerprint = %016x, want Fingerprint(fields) = %016x", ev.Fingerprint, want)
			}
		})
	}
}

// TestParseEveryReason guards the table above against a reason being dropped.
func TestParseEveryReason(t *testing.T) {
	covered := map[string]bool{}
	for _, l := range []string{"", `[]`, `{}`, line(`1`, `1`, `"u"`, `1`), line(`"a"`, `1`, `1`, `1`),
		line(`"a"`, `1`, `"u"`, `"x"`), line(`"a"`, `"x"`, `"u"`, `1`), okTime(ms(readAt + 3600*1000)), okTime(`0`)} {
		c := DefaultConfig()
		c.MaxAge = time.Hour
		r := rec(l)
		r.WatermarkBefore = t0
		if _, q := Parse(r, c); q != nil {
			covered[q.Reason] = true
		}
	}
	c := DefaultConfig()
	c.MaxLine = 1
	if _, q := Parse(rec(`{}`), c); q != nil {
		covered[q.Reason] = true
	}
	for _, reason := range model.QuarantineReasons {
		if !covered[reason] {
			t.Errorf("no input produced quarantine reason %q", reason)
		}
	}
}

func TestParseCopiesRecordFields(t *testing.T) {
	c := DefaultConfig()
	c.MaxAge = 48 * time.Hour
	r := model.Record{
		Partition:       "eu-west",
		Position:        "eu-west/2026-11-04T10.jsonl:42",
		Line:            []byte(`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00"}`),
		ReadAt:          readAt,
		WatermarkBefore: t0 - 60_000,
	}
	ev, q := Parse(r, c)
	if q != nil {
		t.Fatalf("quarantined: %s: %s", q.Reason, q.Detail)
	}
	if ev.Partition != r.Partition || ev.Position != r.Position || ev.ReadAt != r.ReadAt || ev.WatermarkBefore != r.WatermarkBefore {
		t.Errorf("record fields not copied: got %q %q %d %d", ev.Partition, ev.Position, ev.ReadAt, ev.WatermarkBefore)
	}
	if &ev.Payload[0] != &r.Line[0] || len(ev.Payload) != len(r.Line) {
		t.Error("Event.Payload is not the record's line")
	}
	if ev.AfterEnd {
		t.Error("Parse set AfterEnd; that is the dedup stage's verdict")
	}
	ev2, _ := Parse(r, c)
	if !reflect.DeepEqual(ev, ev2) {
		t.Errorf("Parse is not deterministic:\n%+v\n%+v", ev, ev2)
	}
}

func TestParseOversizedPayloadPrefix(t *testing.T) {
	c := DefaultConfig()
	c.MaxLine = 2048
	long := `{"event_id":"` + strings.Repeat("é", 2000) + `"}` // é is 2 bytes: 1 KiB falls mid-rune
	_, q := Parse(rec(long), c)
	if q == nil || q.Reason != model.ReasonOversized {
		t.Fatalf("Parse(%d bytes) = %v, want oversized", len(long), q)
	}
	if len(q.Payload) > MaxPayloadPrefix || len(q.Payload) < MaxPayloadPrefix-3 {
		t.Errorf("payload is %d bytes, want the first ~%d", len(q.Payload), MaxPayloadPrefix)
	}
	if !strings.HasPrefix(long, string(q.Payload)) || !utf8Valid(q.Payload) {
		t.Errorf("payload is not a UTF-8-clean prefix of the line")
	}
	if cap(q.Payload) > 2*MaxPayloadPrefix {
		t.Errorf("payload capacity %d pins the whole line", cap(q.Payload))
	}
	if !strings.Contains(q.Detail, strconv.Itoa(len(long))+" bytes") || !strings.Contains(q.Detail, "--max-line=2048") {
		t.Errorf("detail %q should give the size and the limit", q.Detail)
	}

	// A short oversized prefix (the source cut it) is kept whole.
	r := rec(`{"event_id":"a1"`)
	r.Oversized = true
	if _, q = Parse(r, DefaultConfig()); q == nil || string(q.Payload) != `{"event_id":"a1"` {
		t.Errorf("Parse(oversized prefix) = %+v, want the prefix as payload", q)
	}
}

// asText is a payload's rule, written out: each byte that is not UTF-8
// becomes U+FFFD (sinks store payloads as text); valid lines stay as they are.
func asText(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

func utf8Valid(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// hugeObject is a valid event line with n more distinct keys, and the same
// line whose last key duplicates the first of them.
func hugeObject(n int) (ok, dup string) {
	var b strings.Builder
	b.WriteString(`{"event_id":"a1","event_time":1,"user_id":"u7","amount":1`)
	for i := 0; i < n; i++ {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
	}
	return b.String() + "}", b.String() + `,"k0":1}`
}

// TestParseHugeObject: a duplicate key among 60,000 is found, and the line
// without it passes (BenchmarkParseHugeObject shows the check is linear).
func TestParseHugeObject(t *testing.T) {
	ok, dup := hugeObject(60_000)
	c := DefaultConfig()
	if _, q := Parse(rec(ok), c); q != nil {
		t.Fatalf("quarantined: %s: %s", q.Reason, q.Detail)
	}
	if _, q := Parse(rec(dup), c); q == nil || q.Reason != model.ReasonMalformedJSON {
		t.Fatalf("Parse(duplicate among 60,000 keys) = %+v, want malformed_json", q)
	}
}

// BenchmarkParseHugeObject reports the time per key of the duplicate-key
// check at 6,000 and 60,000 keys: a quadratic check would take ten times as
// long per key at ten times the keys (a loaded 2-core machine read 723 and
// 2,142 ns/key, the difference being the larger map's cache misses).
func BenchmarkParseHugeObject(b *testing.B) {
	c := DefaultConfig()
	for _, n := range []int{6_000, 60_000} {
		_, dup := hugeObject(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				Parse(rec(dup), c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
