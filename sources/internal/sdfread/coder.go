package sdfread

import (
	"fmt"

	"github.com/revenue-stream/hourly/coders"
)

// EncodeRestriction encodes a restriction as its version, then what body
// writes; size is the expected length.
func EncodeRestriction(version uint64, size int, body func(*coders.Writer)) []byte {
	w := coders.Writer{B: make([]byte, 0, size)}
	w.Uvarint(version)
	body(&w)
	return w.B
}

// DecodeRestriction reads what EncodeRestriction wrote, refusing another
// version, a truncated value and trailing bytes; what names the
// restriction in errors.
func DecodeRestriction[R any](b []byte, version uint64, what string, body func(*coders.Reader) R) (R, error) {
	rd := coders.Reader{B: b}
	if v := rd.Uvarint(); rd.Err == nil && v != version {
		var zero R
		return zero, fmt.Errorf("decode %s: unknown version %d", what, v)
	}
	return coders.Done(body(&rd), &rd, what)
}
