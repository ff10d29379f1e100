package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Range is a byte range of a file.
type Range struct {
	Offset int64
	Length int
}

// ReadRanges reads byte ranges of one file and returns each range's bytes,
// in the order given: a local file with a read per range, a registered
// Store's object with a ranged request per range (Beam would stream the
// whole object), any other filesystem (memfs://) in one stream. A range past
// the end is an error wrapping io.ErrUnexpectedEOF; a missing file one
// wrapping fs.ErrNotExist.
func ReadRanges(ctx context.Context, path string, ranges []Range) ([][]byte, error) {
	if len(ranges) == 0 {
		return nil, nil
	}
	var read func(Range) ([]byte, error)
	var done func() error
	switch scheme(path) {
	case "local":
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		read, done = func(r Range) ([]byte, error) {
			b := make([]byte, r.Length)
			if n, err := f.ReadAt(b, r.Offset); n < len(b) {
				return nil, err
			}
			return b, nil
		}, f.Close
	default:
		st, ok := storeFor(scheme(path))
		if !ok {
			return streamRanges(ctx, path, ranges)
		}
		rd, err := st.Ranges(ctx, path)
		if err != nil {
			return nil, err
		}
		read = func(r Range) ([]byte, error) {
			rc, err := rd(r)
			if err != nil {
				return nil, notExist(err)
			}
			defer rc.Close()
			return readExactly(rc, r.Length)
		}
	}
	out := make([][]byte, len(ranges))
	var err error
	for i, r := range ranges {
		if r.Length == 0 {
			out[i] = []byte{}
			continue
		}
		if out[i], err = read(r); err != nil {
			break
		}
	}
	if done != nil {
		err = errors.Join(err, done())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// streamRanges reads the ranges from one stream opened at the first.
func streamRanges(ctx context.Context, path string, ranges []Range) ([][]byte, error) {
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ranges[a].Offset, ranges[b].Offset) })
	rc, err := Open(ctx, path, ranges[order[0]].Offset)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	out := make([][]byte, len(ranges))
	at := ranges[order[0]].Offset
	for k, i := range order {
		r := ranges[i]
		if r.Offset < at { // only a repeat: lines do not overlap
			if prev := ranges[order[k-1]]; r == prev {
				out[i] = out[order[k-1]]
				continue
			}
			return nil, fmt.Errorf("read %s: overlapping ranges", path)
		}
		if _, err := io.CopyN(io.Discard, rc, r.Offset-at); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, io.ErrUnexpectedEOF)
		}
		if out[i], err = readExactly(rc, r.Length); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		at = r.Offset + int64(r.Length)
	}
	return out, nil
}

func readExactly(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
