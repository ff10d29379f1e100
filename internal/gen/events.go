package gen

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// purchase is the business content of one event.
type purchase struct {
	id        string
	eventTime int64 // ms
	user      string
	cents     int64
	country   int // index into countries
	platform  string
}

// countries are weighted (percent) roughly like a global app's revenue, with the
// November UTC offsets their devices report times in.
var countries = []struct {
	code   string
	weight int
	zone   *time.Location
}{
	{"US", 28, time.FixedZone("", -5*3600)},
	{"IN", 12, time.FixedZone("", 5*3600+1800)},
	{"DE", 9, time.FixedZone("", 3600)},
	{"GB", 8, time.FixedZone("", 0)},
	{"BR", 8, time.FixedZone("", -3*3600)},
	{"JP", 7, time.FixedZone("", 9*3600)},
	{"FR", 6, time.FixedZone("", 3600)},
	{"ID", 6, time.FixedZone("", 7*3600)},
	{"MX", 5, time.FixedZone("", -6*3600)},
	{"CA", 4, time.FixedZone("", -5*3600)},
	{"AU", 4, time.FixedZone("", 11*3600)},
	{"KR", 3, time.FixedZone("", 9*3600)},
}

// prices are the store's price points, in cents.
var prices = []int64{99, 199, 299, 499, 999, 1499, 1999, 4999, 9999}

// kinds of originals.
const (
	kindNormal = iota
	kindLate
	kindTooLate
	kindBacklog
)

// original generates purchase i arriving at instant at, with its retries.
func (g *generator) original(i int, at int64) {
	p := g.rng.IntN(len(g.parts))
	part := g.parts[p]
	key := g.deliver(p, at)
	ev := g.purchase(i, 0)

	kind, forced := kindNormal, 0
	margin := g.c.Margin().Milliseconds()
	r := g.rng.Float64()
	switch {
	case key != at:
		kind = kindBacklog // its devices were cut off: keep it ordinary
	case g.forcedLeft > 0 && i >= g.c.Events/2 && part.maxSeen != model.NoWatermark &&
		part.maxSeen-margin >= g.closeTime(g.missing):
		kind, forced = kindTooLate, 4-g.forcedLeft
		g.forcedLeft--
	case r < g.c.LateRate:
		kind = kindLate
	case r < g.c.LateRate+g.c.TooLateRate && part.maxSeen != model.NoWatermark:
		kind = kindTooLate
	}

	switch {
	case forced > 0:
		// A whole window reached only by too-late events: the stream never
		// sees it, reconcile must report it as a missing window.
		ev.eventTime = g.missing + g.rng.Int64N(g.window)
		if forced == 1 {
			g.stats.MissingWindows = append(g.stats.MissingWindows, g.missing)
		}
	case kind == kindLate:
		lo, hi := g.c.LateDelay[0].Milliseconds(), g.c.LateDelay[1].Milliseconds()
		ev.eventTime = at - lo - g.rng.Int64N(hi-lo+1)
		g.stats.Late++
	case kind == kindTooLate:
		// Behind the partition's own progress, not its arrival: the window
		// has then closed for every bound up to the margin.
		lo, hi := g.c.TooLateDelay[0].Milliseconds(), g.c.TooLateDelay[1].Milliseconds()
		ev.eventTime = part.maxSeen - lo - g.rng.Int64N(hi-lo+1)
	default:
		ev.eventTime = at - g.rng.Int64N(g.c.Disorder.Milliseconds()+1)
		if kind == kindBacklog {
			g.stats.Backlog++
		}
	}
	counted := kind != kindTooLate
	if !counted {
		g.stats.TooLate++
		g.stats.TooLateEvents++
	}
	g.tally(counted, ev)

	st := g.style()
	line := g.render(&ev, st)
	g.push(p, key, line, true, ev.eventTime)

	dups, conflict := 0, false
	switch forced {
	case 0:
		if g.rng.Float64() < g.c.DupRate/1.125 {
			dups = 1
			if g.rng.IntN(8) == 0 {
				dups = 2 // a device that retried twice
			}
		}
		conflict = g.rng.Float64() < g.c.ConflictRate
	case 1:
		dups = 1
	case 2:
		conflict = true
	}
	for range dups {
		g.retry(p, key, ev, counted, &g.stats.Duplicates, func() []byte { return g.copyOf(&ev, line, st, 5) })
	}
	if conflict {
		g.retry(p, key, ev, counted, &g.stats.Conflicts, func() []byte {
			bad := ev
			if g.rng.IntN(5) == 0 {
				bad.user = ev.user + "0"
			} else {
				bad.cents = ev.cents + 1 + g.rng.Int64N(ev.cents) // never the same amount
			}
			return g.render(&bad, g.style())
		})
	}
}

// retry queues makeLine's retry of ev, delivered at key in partition p, counted in n (in TooLate
// for a too-late event); retryAt may find no instant for it.
func (g *generator) retry(p int, key int64, ev purchase, counted bool, n *int, makeLine func() []byte) {
	at := g.retryAt(p, key, ev, counted)
	if at < 0 {
		return
	}
	g.push(p, at, makeLine(), true, ev.eventTime)
	if !counted {
		n = &g.stats.TooLate
	}
	*n++
}

// purchase is the new event i at eventTime.
func (g *generator) purchase(i int, eventTime int64) purchase {
	return purchase{id: g.eventID(i), eventTime: eventTime, user: g.user(), cents: g.price(), country: g.country(), platform: g.platform()}
}

// copyOf is a retry's line of ev, first sent as line in style st: the same
// bytes, but one time in oneIn re-serialised by another client library (same
// content, other bytes: "5.00" vs 5, Z vs +05:30), so only a canonical
// fingerprint sees that it is the same event.
func (g *generator) copyOf(ev *purchase, line []byte, st style, oneIn int) []byte {
	if g.rng.IntN(oneIn) == 0 {
		other := g.style()
		if other == st {
			other.amount = (st.amount + 1) % 3
		}
		return g.render(ev, other)
	}
	return line
}

// retryAt picks when a retry of an event delivered at key arrives in its
// partition: usually seconds later, sometimes hours. A retry of a counted
// event must arrive before its window closes (else it would be too late and
// the Stats would lie); -1 means there is no such instant.
func (g *generator) retryAt(p int, key int64, ev purchase, counted bool) int64 {
	var d int64
	if g.rng.IntN(100) < 85 {
		d = 1 + int64(g.rng.ExpFloat64()*20_000)
	} else {
		d = (5 * time.Minute).Milliseconds() + g.rng.Int64N((6*time.Hour - 5*time.Minute).Milliseconds())
	}
	at := g.deliver(p, key+d)
	if counted && at >= g.closeTime(ev.eventTime) {
		return -1
	}
	return at
}

func (g *generator) tally(counted bool, ev purchase) {
	w, micros := windowStart(ev.eventTime, g.window), ev.cents*10_000
	add := func(m map[int64]Total) { m[w] = Total{m[w].RevenueMicros + micros, m[w].Count + 1} }
	add(g.stats.All)
	if counted {
		add(g.stats.Counted)
	}
}

// eventID is unique per index: the mixer is a bijection on uint64.
func (g *generator) eventID(i int) string {
	z := uint64(i) ^ (uint64(g.c.Seed) * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return fmt.Sprintf("evt_%016x", z)
}

func (g *generator) user() string {
	return "u" + strconv.FormatUint(g.zipf.Uint64()+1, 10)
}

func (g *generator) price() int64 {
	if g.rng.IntN(10) < 7 {
		return prices[g.rng.IntN(len(prices))]
	}
	return 50 + g.rng.Int64N(25_000)
}

func (g *generator) country() int {
	r, i := g.rng.IntN(100), 0
	for r >= countries[i].weight {
		r -= countries[i].weight
		i++
	}
	return i
}

func (g *generator) platform() string { return [...]string{"ios", "android", "web"}[g.pick(44, 95)] }

// pick draws r in [0, 100) and returns how many of the ascending thresholds are <= r.
func (g *generator) pick(thresholds ...int) uint8 {
	r := g.rng.IntN(100)
	for i, t := range thresholds {
		if r < t {
			return uint8(i)
		}
	}
	return uint8(len(thresholds))
}

// style is how a client library serialises an event.
type style struct {
	order  uint8 // 0: canonical field order, 1: another SDK's order
	time   uint8 // see appendTime
	amount uint8 // see appendAmount
}

func (g *generator) style() style {
	var s style
	if g.rng.IntN(20) == 0 {
		s.order = 1
	}
	s.time, s.amount = g.pick(84, 90, 95, 98), g.pick(80, 88)
	return s
}

// render serialises an event as one JSON line.
func (g *generator) render(ev *purchase, st style) []byte {
	b := g.buf[:0]
	field := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	str := func(v string) {
		b = append(b, '"')
		b = append(b, v...)
		b = append(b, '"')
	}
	b = append(b, '{')
	fields := [...]func(){
		func() { field("event_id"); str(ev.id) },
		func() { field("event_time"); b = g.appendTime(b, ev, st.time) },
		func() { field("user_id"); str(ev.user) },
		func() { field("amount"); b = appendAmount(b, ev.cents, st.amount) },
		func() { field("country"); str(countries[ev.country].code) },
		func() { field("platform"); str(ev.platform) },
	}
	// Another SDK's order: amount, platform, country, user_id, event_time, event_id.
	for _, k := range [2][6]int{{0, 1, 2, 3, 4, 5}, {3, 5, 4, 2, 1, 0}}[st.order] {
		fields[k]()
	}
	b = append(b, '}')
	g.buf = b
	return append([]byte(nil), b...)
}

// appendTime writes event_time as: 0 RFC 3339 UTC with milliseconds, 1 the
// device's local offset (+05:30), 2 epoch milliseconds (a JSON number),
// 3 microseconds (finer digits the job truncates), 4 whole seconds when the
// milliseconds are zero.
func (g *generator) appendTime(b []byte, ev *purchase, kind uint8) []byte {
	t, layout := time.UnixMilli(ev.eventTime).UTC(), "2006-01-02T15:04:05.000Z07:00"
	switch {
	case kind == 1:
		t, layout = t.In(countries[ev.country].zone), "2006-01-02T15:04:05.000-07:00"
	case kind == 2:
		return strconv.AppendInt(b, ev.eventTime, 10)
	case kind == 3:
		b = t.AppendFormat(append(b, '"'), "2006-01-02T15:04:05.000")
		return append(strconv.AppendInt(b, 100+g.rng.Int64N(900), 10), 'Z', '"')
	case kind == 4 && ev.eventTime%1000 == 0:
		layout = time.RFC3339
	}
	return append(t.AppendFormat(append(b, '"'), layout), '"')
}

// appendAmount writes cents as: 0 a decimal string with 0-2 decimals
// ("5", "5.5", "4.99"), 1 a string with two decimals ("5.00"), 2 a JSON
// number with 0-2 decimals.
func appendAmount(b []byte, cents int64, kind uint8) []byte {
	if kind != 2 {
		b = append(b, '"')
	}
	b = strconv.AppendInt(b, cents/100, 10)
	switch frac := cents % 100; {
	case kind != 1 && frac == 0:
	case kind != 1 && frac%10 == 0:
		b = append(b, '.', byte('0'+frac/10))
	default:
		b = append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
	}
	if kind != 2 {
		b = append(b, '"')
	}
	return b
}

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
