package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// NoDims is the canonical dims of an event when no dimensions are configured.
const NoDims = "{}"

// CanonicalDims renders the named fields as a canonical JSON object, "{}"
// when names is empty: two spellings of one value give one dims key.
func CanonicalDims(fields map[string]json.RawMessage, names []string) (string, error) {
	if len(names) == 0 {
		return NoDims, nil
	}
	sorted := slices.Sorted(slices.Values(names))
	vals := make([][]byte, len(sorted))
	for i, name := range sorted {
		if name == "" || !utf8.ValidString(name) {
			return "", fmt.Errorf("dimension name %q: must be non-empty UTF-8", name)
		}
		if i > 0 && sorted[i-1] == name {
			return "", fmt.Errorf("dimension %q listed twice", name)
		}
		if raw, ok := fields[name]; ok {
			raw = trimWS(raw)
			if err := scanValue(raw); err != nil {
				return "", fmt.Errorf("dimension %q: %w", name, err)
			}
			vals[i] = raw
		}
	}
	return string(appendDims(nil, sorted, vals)), nil
}

// appendDims appends the canonical dims object. names must be sorted and
// unique; vals[i] is the validated raw value of names[i], nil when missing.
func appendDims(dst []byte, names []string, vals [][]byte) []byte {
	dst = append(dst, '{')
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, name)
		dst = append(dst, ':')
		if vals[i] == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst, _ = appendCanonical(dst, vals[i], 0)
	}
	return append(dst, '}')
}

// appendCanonical appends the canonical encoding of the validated JSON value
// starting at data[i] (no leading whitespace) and returns the index past it.
func appendCanonical(dst, data []byte, i int) ([]byte, int) {
	switch c := data[i]; {
	case c == '"':
		end, esc, _ := scanString(data, i)
		if !esc { // a valid unescaped string is already canonical
			return append(dst, data[i:end]...), end
		}
		var tmp [64]byte
		return appendQuoted(dst, unescape(tmp[:0], data[i+1:end-1])), end
	case c == '-' || (c >= '0' && c <= '9'):
		end, _ := scanNumber(data, i)
		return appendCanonicalNumber(dst, data[i:end]), end
	case c == 't':
		return append(dst, "true"...), i + 4
	case c == 'f':
		return append(dst, "false"...), i + 5
	case c == 'n':
		return append(dst, "null"...), i + 4
	case c == '[':
		s, n := scanner{data: data, pos: i}, 0
		dst = append(dst, '[')
		_ = s.list(']', "array", func() error {
			if n++; n > 1 {
				dst = append(dst, ',')
			}
			dst, s.pos = appendCanonical(dst, data, s.pos)
			return nil
		})
		return append(dst, ']'), s.pos
	default: // '{': a scanner collects the (validated) outermost members
		s := scanner{data: data, pos: i}
		_ = s.value()
		slices.SortFunc(s.members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for j, m := range s.members {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, m.key)
			dst = append(dst, ':')
			dst, _ = appendCanonical(dst, m.val, 0)
		}
		return append(dst, '}'), s.pos
	}
}

// appendQuoted appends s as a canonical JSON string (RFC 8785 escaping): only
// '"', '\\' and control characters are escaped. s must be valid UTF-8.
func appendQuoted[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		if j := strings.IndexByte("\"\\\b\t\n\f\r", c); j >= 0 {
			dst = append(dst, '\\', "\"\\btnfr"[j])
		} else {
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
