package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// rangeReaders bounds the files one ReadRanges reads at once.
const rangeReaders = 8

// ReadRanges reads each ref's bytes, in the order of refs: the refs of one file in one call,
// up to rangeReaders files at once. A local file is read with a read per range, a registered
// Store's object with a ranged request per range (Beam would stream the whole object), any other
// filesystem (memfs://) in one stream. A range past the end is an error wrapping
// io.ErrUnexpectedEOF; a missing file one wrapping fs.ErrNotExist.
func ReadRanges(ctx context.Context, refs []model.LineRef) ([][]byte, error) {
	byPath := map[string][]int{}
	var paths []string
	for i, r := range refs {
		if _, ok := byPath[r.Path]; !ok {
			paths = append(paths, r.Path)
		}
		byPath[r.Path] = append(byPath[r.Path], i)
	}
	out := make([][]byte, len(refs))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, rangeReaders)
	var wg sync.WaitGroup
	for k, path := range paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			idx := byPath[path]
			b, err := readFileRanges(ctx, path, slicesx.Map(idx, func(i int) model.LineRef { return refs[i] }))
			if err != nil {
				errs[k] = err
				return
			}
			for j, i := range idx {
				out[i] = b[j]
			}
		})
	}
	wg.Wait()
	if err := cmp.Or(errs...); err != nil {
		return nil, err // the first path's
	}
	return out, nil
}

// readFileRanges reads ranges of the one file path.
func readFileRanges(ctx context.Context, path string, ranges []model.LineRef) ([][]byte, error) {
	var read func(model.LineRef) ([]byte, error)
	var done func() error
	switch scheme(path) {
	case "local":
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		read = func(r model.LineRef) ([]byte, error) {
			return readExactly(io.NewSectionReader(f, r.Offset, int64(r.Length)), r.Length)
		}
		done = f.Close
	default:
		st, ok := stores[scheme(path)]
		if !ok {
			return streamRanges(ctx, path, ranges)
		}
		bucket, object, ok := strings.Cut(strings.TrimPrefix(path, scheme(path)), "/")
		if !ok {
			return nil, fmt.Errorf("read %s: not an object path", path)
		}
		rd, err := st.Ranges(ctx, bucket, object)
		if err != nil {
			return nil, err
		}
		read = func(r model.LineRef) ([]byte, error) {
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
func streamRanges(ctx context.Context, path string, ranges []model.LineRef) ([][]byte, error) {
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
