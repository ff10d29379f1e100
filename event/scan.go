package event

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxDepth bounds nesting so a hostile line ("[[[[...") cannot grow the stack.
const maxDepth = 128

// dupMapThreshold is the key count from which the duplicate-key check uses a
// map rather than a linear scan, so 100,000 keys are not quadratic.
const dupMapThreshold = 32

// member is one key of an object being scanned, with its raw value.
type member struct {
	key []byte // unescaped; aliases the input unless the key had escapes
	val []byte
}

// syntaxError locates a JSON error in the line.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg)
}

// scanner is a strict, allocation-light JSON validator (RFC 8259 plus the
// package doc's rules) that records the outermost object's members in one
// pass, so Parse picks its fields without a second decode.
type scanner struct {
	data  []byte
	pos   int
	depth int
	// members is a stack: the outermost object's members, then those of the
	// nested object being scanned.
	members []member
}

// scanners recycles member stacks, which would be the bulk of Parse's garbage.
var scanners = sync.Pool{New: func() any { return &scanner{members: make([]member, 0, 16)} }}

// maxPooledMembers keeps one huge line from parking a huge stack in the pool.
const maxPooledMembers = 256

func getScanner() *scanner { return scanners.Get().(*scanner) }

// putScanner pools s without references that would keep a line alive.
func putScanner(s *scanner) {
	if cap(s.members) > maxPooledMembers {
		return
	}
	clear(s.members[:cap(s.members)])
	s.members = s.members[:0]
	s.data = nil
	scanners.Put(s)
}

// bomUTF8 is ignored at the start of a line (RFC 8259 §8.1).
var bomUTF8 = []byte{0xEF, 0xBB, 0xBF}

// scanLine validates line as exactly one JSON value with optional whitespace
// around it, and reports whether it is an object (then s.members holds its
// members in input order).
func (s *scanner) scanLine(line []byte) (isObject bool, err error) {
	*s = scanner{data: line, members: s.members[:0]}
	if bytes.HasPrefix(line, bomUTF8) {
		s.pos = len(bomUTF8)
	}
	start := s.pos
	if err := s.whole("empty line"); err != nil {
		return false, err
	}
	return trimWS(line[start:])[0] == '{', nil
}

// scanValue validates raw as exactly one JSON value with optional whitespace.
func scanValue(raw []byte) error {
	s := scanner{data: raw}
	return s.whole("empty value")
}

// whole scans one value from s.pos to the end, whitespace allowed around it.
func (s *scanner) whole(empty string) error {
	s.skipWS()
	if s.pos == len(s.data) {
		return &syntaxError{s.pos, empty}
	}
	if err := s.value(); err != nil {
		return err
	}
	s.skipWS()
	if s.pos != len(s.data) {
		return s.errorf("unexpected %s after the JSON value", s.found())
	}
	return nil
}

func (s *scanner) errorf(format string, args ...any) error {
	return &syntaxError{s.pos, fmt.Sprintf(format, args...)}
}

// found describes the byte at the current position for error messages.
func (s *scanner) found() string {
	if s.pos >= len(s.data) {
		return "end of line"
	}
	c := s.data[s.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipWS() {
	i := s.pos
	for i < len(s.data) && isWS(s.data[i]) {
		i++
	}
	s.pos = i
}

func (s *scanner) value() error {
	if s.pos >= len(s.data) {
		return s.errorf("unexpected end of line, expected a value")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		end, _, err := scanString(s.data, s.pos)
		if err != nil {
			return err
		}
		s.pos = end
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok := scanNumber(s.data, s.pos)
		if !ok {
			s.pos = end
			return s.errorf("invalid number: unexpected %s", s.found())
		}
		s.pos = end
		return nil
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.errorf("unexpected %s, expected a value", s.found())
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
		return s.errorf("invalid literal, expected %s", lit)
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) enter() error {
	s.depth++
	if s.depth > maxDepth {
		return s.errorf("nesting deeper than %d", maxDepth)
	}
	return nil
}

func (s *scanner) array() error { return s.list(']', "array", s.value) }

func (s *scanner) object() error {
	outermost := s.depth == 0
	base := len(s.members)
	var seen map[string]struct{} // only for objects with many keys
	err := s.list('}', "object", func() error {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.errorf("unexpected %s, expected a string key", s.found())
		}
		keyAt := s.pos
		end, esc, err := scanString(s.data, s.pos)
		if err != nil {
			return err
		}
		key := s.data[keyAt+1 : end-1]
		if esc {
			key = unescape(nil, key)
		}
		dup := false
		if n := len(s.members) - base; seen == nil && n < dupMapThreshold {
			for _, m := range s.members[base:] {
				dup = dup || bytes.Equal(m.key, key)
			}
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*n)
				for _, m := range s.members[base:] {
					seen[string(m.key)] = struct{}{}
				}
			}
			_, dup = seen[string(key)]
			seen[string(key)] = struct{}{}
		}
		if dup {
			return &syntaxError{keyAt, "duplicate key " + strconv.Quote(string(key))}
		}
		idx := len(s.members)
		s.members = append(s.members, member{key: key})
		s.pos = end
		s.skipWS()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.errorf("unexpected %s after object key, expected ':'", s.found())
		}
		s.pos++
		s.skipWS()
		valAt := s.pos
		if err := s.value(); err != nil {
			return err
		}
		// By index: nested objects may have grown (and moved) the stack.
		s.members[idx].val = s.data[valAt:s.pos]
		return nil
	})
	if err == nil && !outermost {
		s.members = s.members[:base]
	}
	return err
}

// list scans an array or object (what) from its opening byte past its
// closing one, item scanning each element.
func (s *scanner) list(closing byte, what string, item func() error) error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // '[' or '{'
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == closing {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		s.skipWS()
		if s.pos >= len(s.data) {
			return s.errorf("unexpected end of line in %s", what)
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipWS()
		case closing:
			s.pos++
			s.depth--
			return nil
		default:
			return s.errorf("unexpected %s in %s, expected ',' or '%c'", s.found(), what, closing)
		}
	}
}

// scanString validates the JSON string at data[i] and returns the index past
// its closing quote and whether it has escapes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for {
		// Fast path over plain ASCII.
		for i < len(data) {
			c := data[i]
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				break
			}
			i++
		}
		if i >= len(data) {
			return i, escaped, &syntaxError{start, "unterminated string"}
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				return i, escaped, &syntaxError{start, "unterminated string"}
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := digits(data, i+2, 4, 16)
				if !ok {
					return i, escaped, &syntaxError{i, `invalid \u escape`}
				}
				switch {
				case r >= 0xDC00 && r <= 0xDFFF:
					return i, escaped, &syntaxError{i, fmt.Sprintf(`lone surrogate \u%04x`, r)}
				case r >= 0xD800 && r <= 0xDBFF:
					lo, ok := -1, false
					if i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						lo, ok = digits(data, i+8, 4, 16)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return i, escaped, &syntaxError{i, fmt.Sprintf(`lone surrogate \u%04x`, r)}
					}
					i += 12
				default:
					i += 6
				}
			default:
				return i, escaped, &syntaxError{i, "invalid escape " + strconv.Quote(string(data[i:i+2]))}
			}
		case c < 0x20:
			return i, escaped, &syntaxError{i, fmt.Sprintf("control character 0x%02x in string", c)}
		default: // c >= 0x80
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, escaped, &syntaxError{i, "invalid UTF-8 in string"}
			}
			i += size
		}
	}
}

// unescape appends the content of a validated JSON string body to dst.
func unescape(dst, body []byte) []byte {
	for {
		j := bytes.IndexByte(body, '\\')
		if j < 0 {
			return append(dst, body...)
		}
		dst, body = append(dst, body[:j]...), body[j:]
		if e := body[1]; e != 'u' { // '"', '\\', '/' stand for themselves
			if k := strings.IndexByte("bfnrt", e); k >= 0 {
				e = "\b\f\n\r\t"[k]
			}
			dst, body = append(dst, e), body[2:]
			continue
		}
		r, _ := digits(body, 2, 4, 16)
		if r >= 0xD800 && r <= 0xDBFF {
			lo, _ := digits(body, 8, 4, 16)
			r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			body = body[6:]
		}
		dst, body = utf8.AppendRune(dst, rune(r)), body[6:]
	}
}

// stringToken validates raw as one JSON string token and returns its
// unescaped content (aliasing raw unless it had escapes).
func stringToken(raw []byte) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return nil, fmt.Errorf("not a JSON string")
	}
	end, esc, err := scanString(raw, 0)
	if err != nil {
		return nil, err
	}
	if end != len(raw) {
		return nil, fmt.Errorf("unexpected data after the JSON string")
	}
	body := raw[1 : end-1]
	if esc {
		return unescape(nil, body), nil
	}
	return body, nil
}

// trimWS removes JSON whitespace around a token.
func trimWS(b []byte) []byte { return bytes.Trim(b, " \t\n\r") }

// kind names the JSON type of a raw value for error messages.
func kind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "an invalid value"
}

// isNull reports whether a raw (whitespace-free) value is the null literal.
func isNull(raw []byte) bool { return string(raw) == "null" }
