package event

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Amount bounds (SPEC §3): at most 6 fractional digits, |amount| < 1e12.
const (
	// MicrosPerUnit is the scale of every amount: millionths of the unit.
	MicrosPerUnit = 1_000_000
	// AmountLimitMicros is the exclusive bound on |AmountMicros| (1e12 units).
	AmountLimitMicros = 1_000_000_000_000 * MicrosPerUnit
)

// ParseAmount reads an amount's raw JSON token (a number, or a string holding
// exactly a number literal) in exact micros, never through float64.
func ParseAmount(raw []byte) (int64, error) {
	raw = trimWS(raw)
	tok := raw
	if len(raw) > 0 && raw[0] == '"' {
		s, err := stringToken(raw)
		if err != nil {
			return 0, fmt.Errorf("amount %s: %w", clip(raw), err)
		}
		tok = s
	} else if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, fmt.Errorf("amount must be a decimal string or a JSON number, got %s", kind(raw))
	}
	d, ok := parseDecimal(tok)
	if !ok {
		return 0, fmt.Errorf("amount %s: not a decimal number", clip(raw))
	}
	m, err := d.scaled(6, false, AmountLimitMicros-1)
	switch {
	case errors.Is(err, errTooPrecise):
		return 0, fmt.Errorf("amount %s: more than 6 fractional digits", clip(raw))
	case errors.Is(err, errTooLarge):
		return 0, fmt.Errorf("amount %s: |amount| must be less than 1e12", clip(raw))
	case err != nil:
		return 0, fmt.Errorf("amount %s: %w", clip(raw), err)
	}
	if d.neg {
		return -int64(m), nil
	}
	return int64(m), nil
}

// clipLen bounds how much of an offending value an error message quotes.
const clipLen = 48

// clip renders a raw value for an error message: at most clipLen bytes,
// quoted when not printable.
func clip(raw []byte) string {
	s := raw
	cut := false
	if len(s) > clipLen {
		s, cut = runeCut(s, clipLen), true
	}
	out := string(s)
	if !utf8.Valid(s) || hasControl(s) {
		out = strconv.Quote(out)
	}
	if cut {
		out += "…"
	}
	return out
}
