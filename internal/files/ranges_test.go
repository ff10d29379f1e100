package files_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
)

// TestReadRanges reads lines back by byte range on every filesystem: local,
// GCS and S3 (ranged requests against the fake servers) and memfs (one
// stream), in any order, a range twice; a range past the end and a missing
// file are errors.
func TestReadRanges(t *testing.T) {
	ctx := context.Background()
	lines := []string{`{"event_id":"a"}`, `{"event_id":"bb"}`, ``, `{"event_id":"ccc","amount":"1.5"}`}
	content := strings.Join(lines, "\n") + "\n"
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			path := files.Join(root, "p0", "000001.jsonl")
			writeFile(t, path, content)
			var ranges []model.LineRef
			var want []string
			at := int64(0)
			for _, l := range lines {
				if l != "" {
					ranges = append(ranges, model.LineRef{Path: path, Offset: at, Length: len(l)})
					want = append(want, l)
				}
				at += int64(len(l)) + 1
			}
			// Out of order, with a repeat.
			ranges = append([]model.LineRef{ranges[2], ranges[0]}, ranges...)
			want = append([]string{want[2], want[0]}, want...)
			got, err := files.ReadRanges(ctx, ranges)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if string(got[i]) != want[i] {
					t.Errorf("range %d %+v = %q, want %q", i, ranges[i], got[i], want[i])
				}
			}
			past := []model.LineRef{{Path: path, Offset: int64(len(content)) - 3, Length: 10}}
			if _, err := files.ReadRanges(ctx, past); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("a range past the end: error %v, want io.ErrUnexpectedEOF", err)
			}
			missing := ranges[0]
			missing.Path = files.Join(root, "p0", "missing.jsonl")
			_, err = files.ReadRanges(ctx, []model.LineRef{missing})
			if err == nil || (name != "memfs" && !errors.Is(err, fs.ErrNotExist)) {
				t.Errorf("a missing file: error %v, want fs.ErrNotExist", err)
			}
		})
	}
}
