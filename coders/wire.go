// Package coders holds compact binary coders for the pipeline's element types,
// smaller and cheaper than Beam's reflective schema coder; dedup and revision
// state are stored in this format.
package coders

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// ErrShort is returned when an encoded value ends early.
var ErrShort = errors.New("coders: truncated value")

// Writer appends primitive values to a byte slice.
type Writer struct{ B []byte }

func (w *Writer) Varint(v int64) { w.B = binary.AppendVarint(w.B, v) }

func (w *Writer) Uvarint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }

// Fixed64 appends 8 bytes little endian (for hashes, which varints would grow).
func (w *Writer) Fixed64(v uint64) { w.B = binary.LittleEndian.AppendUint64(w.B, v) }

// Bytes and String append a length-prefixed value.
func (w *Writer) Bytes(b []byte) { w.Uvarint(uint64(len(b))); w.B = append(w.B, b...) }

func (w *Writer) String(s string) { w.Uvarint(uint64(len(s))); w.B = append(w.B, s...) }

// FrontString writes s as the length of its common prefix with prev (the same
// field of the previous element), then the rest: a position after its
// predecessor costs 4 bytes instead of 21.
func (w *Writer) FrontString(prev, s string) {
	n := 0
	for n < len(prev) && n < len(s) && prev[n] == s[n] {
		n++
	}
	w.Uvarint(uint64(n))
	w.String(s[n:])
}

func (w *Writer) Bool(b bool) {
	if b {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

// Reader consumes what Writer produced; the first error sticks in Err.
type Reader struct {
	B   []byte
	Err error
}

func (r *Reader) fail(what string) {
	if r.Err == nil {
		r.Err = fmt.Errorf("%w: reading %s", ErrShort, what)
	}
}

func (r *Reader) Varint() int64 { return readVarint(r, binary.Varint, "varint") }

func (r *Reader) Uvarint() uint64 { return readVarint(r, binary.Uvarint, "uvarint") }

func readVarint[T int64 | uint64](r *Reader, read func([]byte) (T, int), what string) T {
	v, n := read(r.B)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Count reads a length whose elements take at least minBytes each, bounded by the bytes left so
// that a corrupt one cannot allocate gigabytes.
func (r *Reader) Count(minBytes int) int {
	n := r.Uvarint()
	if r.Err == nil && n > uint64(len(r.B)/minBytes) {
		r.Err = fmt.Errorf("%w: length %d exceeds the encoded data", ErrShort, n)
		return 0
	}
	return int(n)
}

func (r *Reader) Fixed64() uint64 {
	if len(r.B) < 8 {
		r.fail("fixed64")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.B)
	r.B = r.B[8:]
	return v
}

// Bytes reads a length-prefixed slice, copied so it does not alias the input.
func (r *Reader) Bytes() []byte {
	if b := r.next("bytes"); len(b) > 0 {
		return append([]byte(nil), b...)
	}
	return nil // an event's dropped payload: no allocation per event
}

func (r *Reader) String() string { return string(r.next("string")) }

// next consumes a length-prefixed slice, which aliases the input.
func (r *Reader) next(what string) []byte {
	n := r.Uvarint()
	if r.Err != nil || uint64(len(r.B)) < n {
		r.fail(what)
		return nil
	}
	b := r.B[:n]
	r.B = r.B[n:]
	return b
}

// FrontString reads a string written by Writer.FrontString after prev.
func (r *Reader) FrontString(prev string) string {
	n := r.Uvarint()
	m := r.Uvarint()
	if r.Err != nil || n > uint64(len(prev)) || uint64(len(r.B)) < m {
		r.fail("front-coded string")
		return ""
	}
	suffix := r.B[:m]
	r.B = r.B[m:]
	if m == 0 && n == uint64(len(prev)) {
		return prev // a repeat shares the previous string: no allocation
	}
	var b strings.Builder
	b.Grow(int(n) + len(suffix))
	b.WriteString(prev[:n])
	b.Write(suffix)
	return b.String()
}

func (r *Reader) Bool() bool {
	if len(r.B) < 1 {
		r.fail("bool")
		return false
	}
	v := r.B[0] != 0
	r.B = r.B[1:]
	return v
}
