package event

import (
	"errors"
	"strconv"
)

// maxExp saturates decimal exponents (canonical numbers then keep their text).
const maxExp = 1 << 40

// scanNumber checks the RFC 8259 number grammar
//
//	-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
//
// from data[i] and returns the index past the number, or (ok false) of the
// offending byte.
func scanNumber(data []byte, i int) (end int, ok bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// decimal is the exact value (-1)^neg × sig × 10^exp of a JSON number
// literal, sig being its digits from the first to the last non-zero one and
// exp the power of ten of the last: text keeps money exact.
type decimal struct {
	neg bool
	// sig is whole then frac, slices of the token trimmed of outer zeros.
	whole, frac []byte
	exp         int64
	// overflow is set when the exponent saturated at ±maxExp.
	overflow bool
}

// k returns the number of significant digits.
func (d *decimal) k() int { return len(d.whole) + len(d.frac) }

// digit returns significant digit i (0 = most significant).
func (d *decimal) digit(i int) byte {
	if i < len(d.whole) {
		return d.whole[i]
	}
	return d.frac[i-len(d.whole)]
}

func (d *decimal) isZero() bool { return d.k() == 0 }

// parseDecimal reads tok, which must be exactly one JSON number literal.
func parseDecimal(tok []byte) (decimal, bool) {
	end, ok := scanNumber(tok, 0)
	if !ok || end != len(tok) || len(tok) == 0 {
		return decimal{}, false
	}
	d := decimal{neg: tok[0] == '-'}
	i := 0
	if d.neg {
		i = 1
	}
	j := skipDigits(tok, i)
	whole, frac := tok[i:j], []byte(nil)
	if j < len(tok) && tok[j] == '.' {
		i, j = j+1, skipDigits(tok, j+1)
		frac = tok[i:j]
	}
	exp := tok[min(j+1, len(tok)):] // after 'e' or 'E'
	var e int64
	if len(exp) > 0 {
		eneg := exp[0] == '-'
		if eneg || exp[0] == '+' {
			exp = exp[1:]
		}
		for _, c := range exp {
			if e < maxExp {
				e = e*10 + int64(c-'0')
			}
		}
		if e >= maxExp {
			e, d.overflow = maxExp, true
		}
		if eneg {
			e = -e
		}
	}
	// Drop leading zeros (across the point) and trailing zeros, which raise the exponent.
	lastExp := e - int64(len(frac)) // power of ten of the last written digit
	for len(whole) > 0 && whole[0] == '0' {
		whole = whole[1:]
	}
	for len(whole) == 0 && len(frac) > 0 && frac[0] == '0' {
		frac = frac[1:]
	}
	k := len(whole) + len(frac)
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	for len(frac) == 0 && len(whole) > 0 && whole[len(whole)-1] == '0' {
		whole = whole[:len(whole)-1]
	}
	d.whole, d.frac, d.exp = whole, frac, lastExp+int64(k-len(whole)-len(frac))
	if d.isZero() {
		d.neg, d.exp = false, 0 // -0 is 0
	}
	return d, true
}

var (
	errTooLarge   = errors.New("out of range")
	errTooPrecise = errors.New("too many fractional digits")
)

// scaled returns the magnitude of d × 10^scale as an integer of at most limit:
// exact (else errTooPrecise), or with floor, rounded towards negative infinity.
func (d *decimal) scaled(scale int64, floor bool, limit uint64) (uint64, error) {
	if d.isZero() {
		return 0, nil
	}
	keep := int64(d.k()) // digits at or above the unit
	e := d.exp + scale   // power of ten of the last significant digit
	if e < 0 {           // that non-zero digit lies below the unit
		if !floor {
			return 0, errTooPrecise
		}
		keep += e
	}
	if keep+max(e, 0) > 20 { // at least 10^20 > any uint64 limit
		return 0, errTooLarge
	}
	var m uint64
	for i := 0; i < int(keep); i++ {
		m = m*10 + uint64(d.digit(i)-'0')
		if m > limit {
			return 0, errTooLarge
		}
	}
	for ; e > 0; e-- {
		if m > limit/10 {
			return 0, errTooLarge
		}
		m *= 10
	}
	if e < 0 && d.neg {
		m++ // floor: -1.5 -> -2
	}
	if m > limit {
		return 0, errTooLarge
	}
	return m, nil
}

// appendCanonicalNumber appends a valid number literal's exact value in the
// ECMAScript Number-to-String layout (as RFC 8785), never through float64.
func appendCanonicalNumber(dst, tok []byte) []byte {
	d, ok := parseDecimal(tok)
	if !ok || d.overflow { // an absurd exponent keeps its (deterministic) text
		return append(dst, tok...)
	}
	if d.isZero() {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	k := int64(d.k())
	n := d.exp + k // value = 0.sig × 10^n
	appendSig := func(dst []byte, from, to int64) []byte {
		for i := from; i < to; i++ {
			dst = append(dst, d.digit(int(i)))
		}
		return dst
	}
	switch {
	case k <= n && n <= 21:
		dst = appendSig(dst, 0, k)
		for i := k; i < n; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = appendSig(dst, 0, n)
		dst = append(dst, '.')
		dst = appendSig(dst, n, k)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := n; i < 0; i++ {
			dst = append(dst, '0')
		}
		dst = appendSig(dst, 0, k)
	default:
		dst = append(dst, d.digit(0))
		if k > 1 {
			dst = append(dst, '.')
			dst = appendSig(dst, 1, k)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, n-1, 10)
	}
	return dst
}
