package gen

import (
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// malformedKinds is the cycle of bad lines, one defect each, so that each
// line's quarantine reason is unambiguous. too_old is missing: it only
// exists with --max-age, which is off by default. The oversized line comes
// once per log (it costs a whole --max-line of disk).
var malformedKinds = []string{
	model.ReasonMalformedJSON,
	model.ReasonNotAnObject,
	model.ReasonMissingField,
	model.ReasonBadEventID,
	model.ReasonBadUserID,
	model.ReasonBadAmount,
	model.ReasonBadEventTime,
	model.ReasonFutureEventTime,
	model.ReasonOversized,
}

// malformedLine returns the next bad line of the cycle, as if sent at at.
func (g *generator) malformedLine(at int64) []byte {
	m := g.malformedSeen
	g.malformedSeen++
	kind := malformedKinds[m%len(malformedKinds)]
	if m >= len(malformedKinds) {
		kind = malformedKinds[m%(len(malformedKinds)-1)]
	}
	g.stats.Malformed++
	g.stats.MalformedKinds[kind]++

	id := `"bad_` + strconv.Itoa(m) + `"`
	ts := `"` + time.UnixMilli(at).UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`
	user, amount := `"u1"`, `"4.99"`
	variant := m / len(malformedKinds)
	pick := func(vs ...string) string { return vs[variant%len(vs)] }
	obj := func(id, ts, user, amount string) []byte {
		return []byte(`{"event_id":` + id + `,"event_time":` + ts + `,"user_id":` + user + `,"amount":` + amount + `,"country":"US","platform":"ios"}`)
	}
	switch kind {
	case model.ReasonMalformedJSON:
		// Torn writes and hand-edited lines.
		full := string(obj(id, ts, user, amount))
		return []byte(pick(full[:len(full)/2], full+"}", `{'event_id': 'x'}`))
	case model.ReasonNotAnObject:
		return []byte(pick(`[`+id+`,`+ts+`,`+user+`,`+amount+`]`, `"`+ts[1:len(ts)-1]+`"`, `null`))
	case model.ReasonMissingField:
		return []byte(pick(`{"event_id":`+id+`,"event_time":`+ts+`,"user_id":`+user+`}`,
			`{"event_id":`+id+`,"event_time":`+ts+`,"amount":`+amount+`}`))
	case model.ReasonBadEventID:
		return obj(pick(`""`, `42`), ts, user, amount)
	case model.ReasonBadUserID:
		return obj(id, ts, pick(`""`, `12345`), amount)
	case model.ReasonBadAmount:
		return obj(id, ts, user, pick(`"4,99"`, `"0.1234567"`, `"NaN"`, `"1000000000000"`))
	case model.ReasonBadEventTime:
		return obj(id, pick(`"2026-11-04T10:15:00"`, `"04/11/2026 10:15"`, `"yesterday"`), user, amount)
	case model.ReasonFutureEventTime:
		// A device whose clock is ten years ahead: it must never advance
		// the watermark.
		future := time.UnixMilli(at).UTC().AddDate(10, 0, 0)
		return obj(id, `"`+future.Format("2006-01-02T15:04:05.000Z07:00")+`"`, user, amount)
	default: // oversized
		return []byte(`{"event_id":` + id + `,"event_time":` + ts + `,"user_id":` + user + `,"amount":` + amount +
			`,"note":"` + strings.Repeat("x", g.maxLine) + `"}`)
	}
}
