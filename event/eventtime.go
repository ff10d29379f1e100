package event

import (
	"errors"
	"fmt"
	"time"
)

// Event-time range: four-digit years, so every event_time renders as RFC 3339.
const (
	// MinEventTime is 0000-01-01T00:00:00Z in epoch milliseconds.
	MinEventTime int64 = -62167219200000
	// MaxEventTime is 9999-12-31T23:59:59.999Z in epoch milliseconds.
	MaxEventTime int64 = 253402300799999
)

// ParseEventTime reads an event_time's raw JSON token (RFC 3339, or epoch ms
// as a number or numeric string) as epoch ms, floored to its millisecond.
func ParseEventTime(raw []byte) (int64, error) {
	raw = trimWS(raw)
	if len(raw) == 0 {
		return 0, errors.New("event_time is empty")
	}
	switch c := raw[0]; {
	case c == '"':
		s, err := stringToken(raw)
		if err != nil {
			return 0, fmt.Errorf("event_time %s: %w", clip(raw), err)
		}
		if d, ok := parseDecimal(s); ok {
			return epochMillis(d, raw)
		}
		ms, err := parseRFC3339(s)
		if err != nil {
			return 0, fmt.Errorf("event_time %s: not RFC 3339 or epoch milliseconds: %w", clip(raw), err)
		}
		return ms, nil
	case c == '-' || (c >= '0' && c <= '9'):
		d, ok := parseDecimal(raw)
		if !ok {
			return 0, fmt.Errorf("event_time %s: not a number", clip(raw))
		}
		return epochMillis(d, raw)
	}
	return 0, fmt.Errorf("event_time must be an RFC 3339 string or epoch milliseconds, got %s", kind(raw))
}

// epochMillis floors a decimal count of milliseconds and checks the range.
func epochMillis(d decimal, raw []byte) (int64, error) {
	// The limit covers both ends (and flooring's +1); the exact check follows.
	m, err := d.scaled(0, true, uint64(MaxEventTime)+1)
	if err == nil {
		ms := int64(m)
		if d.neg {
			ms = -ms
		}
		if ms >= MinEventTime && ms <= MaxEventTime {
			return ms, nil
		}
	}
	return 0, fmt.Errorf("event_time %s: epoch milliseconds outside years 0000-9999", clip(raw))
}

// parseRFC3339 parses RFC 3339 by hand: time.Parse rejects the lower-case
// separators and leap second it allows, and allocates a zone per offset.
func parseRFC3339(s []byte) (int64, error) {
	if len(s) < len("2006-01-02T15:04:05") {
		return 0, errors.New("want YYYY-MM-DDThh:mm:ss followed by Z or ±hh:mm")
	}
	year, ok1 := digits(s, 0, 4, 10)
	month, ok2 := digits(s, 5, 2, 10)
	day, ok3 := digits(s, 8, 2, 10)
	hour, ok4 := digits(s, 11, 2, 10)
	minute, ok5 := digits(s, 14, 2, 10)
	sec, ok6 := digits(s, 17, 2, 10)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return 0, errors.New("want YYYY-MM-DDThh:mm:ss")
	}
	if sep := s[10]; sep != 'T' && sep != 't' && sep != ' ' {
		return 0, fmt.Errorf("unexpected %q between date and time", sep)
	}
	date := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
	if month < 1 || month > 12 || day < 1 || date.Day() != day {
		return 0, errors.New("no such date")
	}
	if hour > 23 || minute > 59 || sec > 60 {
		return 0, errors.New("no such time of day")
	}
	i := 19
	var frac int64 // milliseconds from the fraction, truncated
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			if j-i <= 3 {
				frac = frac*10 + int64(s[j]-'0')
			}
			j++
		}
		if j == i+1 {
			return 0, errors.New("empty fraction of a second")
		}
		for n := j - i - 1; n < 3; n++ {
			frac *= 10
		}
		i = j
	}
	if sec == 60 { // a leap second stays in its minute (and hour's window)
		sec, frac = 59, 999
	}
	if i >= len(s) {
		return 0, errors.New("missing time zone offset")
	}
	var offset int64 // seconds east of UTC
	switch s[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		oh, ok1 := digits(s, i+1, 2, 10)
		om, ok2 := digits(s, i+4, 2, 10)
		if !ok1 || !ok2 || s[i+3] != ':' {
			return 0, errors.New("want offset ±hh:mm")
		}
		if oh > 23 || om > 59 {
			return 0, errors.New("offset out of range")
		}
		offset = int64(oh*3600 + om*60)
		if s[i] == '-' {
			offset = -offset
		}
		i += 6
	default:
		return 0, fmt.Errorf("unexpected %q, want Z or ±hh:mm", s[i])
	}
	if i != len(s) {
		return 0, errors.New("unexpected text after the offset")
	}
	secs := date.Unix() + int64(hour*3600+minute*60+sec) - offset
	ms := secs*1000 + frac
	if ms < MinEventTime || ms > MaxEventTime {
		return 0, errors.New("outside years 0000-9999 in UTC")
	}
	return ms, nil
}

// digits reads n digits in base 10 or 16 at s[i:].
func digits(s []byte, i, n, base int) (int, bool) {
	if i < 0 || i+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range s[i : i+n] {
		d := int(c - '0') // bytes wrap: below '0' is above 9
		if d > 9 {
			if d = int(c|0x20-'a') + 10; base != 16 || d > 15 {
				return 0, false
			}
		}
		v = v*base + d
	}
	return v, true
}
