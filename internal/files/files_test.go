package files_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/testing/gcstest"
	"github.com/revenue-stream/hourly/testing/s3test"
)

// roots returns one empty folder per filesystem: local, GCS and S3 (the
// fake servers) and memfs.
func roots(t *testing.T) map[string]string {
	return map[string]string{
		"local": t.TempDir(),
		"gcs":   gcstest.NewBucket(t) + "/raw",
		"s3":    s3test.NewBucket(t) + "/raw",
		"memfs": "memfs://" + t.Name() + "/raw",
	}
}

// writeFile writes content to path (making a local path's folders).
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if files.IsLocal(path) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := files.WriteFile(context.Background(), path, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestListOpenWrite(t *testing.T) {
	ctx := context.Background()
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			put := func(rel, content string) { t.Helper(); writeFile(t, files.Join(root, rel), content) }
			put("a.jsonl", "root\n")
			put("p1/002.jsonl", "two\n")
			put("p1/001.jsonl", "one\nline2\n")
			put("p0/000.jsonl", "zero\n")
			put("p0/deeper/x.jsonl", "deep\n") // deeper folders are not listed

			l, err := files.List(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Files, []string{"a.jsonl"}) || !slices.Equal(l.Dirs, []string{"p0", "p1"}) {
				t.Errorf("List(root) = %+v, want files [a.jsonl], dirs [p0 p1]", l)
			}
			l, err = files.List(ctx, files.Join(root, "p1"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Files, []string{"001.jsonl", "002.jsonl"}) || len(l.Dirs) != 0 {
				t.Errorf("List(p1) = %+v, want files [001.jsonl 002.jsonl]", l)
			}

			for _, tc := range []struct {
				offset int64
				want   string
			}{{0, "one\nline2\n"}, {4, "line2\n"}, {10, ""}, {99, ""}} {
				rc, err := files.Open(ctx, files.Join(root, "p1", "001.jsonl"), tc.offset)
				if err != nil {
					t.Fatalf("Open at %d: %v", tc.offset, err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || string(got) != tc.want {
					t.Errorf("Open at %d = %q, %v; want %q", tc.offset, got, err, tc.want)
				}
			}
			if n, err := files.Size(ctx, files.Join(root, "p1", "001.jsonl")); err != nil || n != 10 {
				t.Errorf("Size = %d, %v; want 10", n, err)
			}
			_, err = files.Open(ctx, files.Join(root, "p1", "missing.jsonl"), 0)
			if name != "memfs" && !errors.Is(err, fs.ErrNotExist) { // memfs returns os.ErrNotExist too
				t.Errorf("Open(missing) error = %v, want fs.ErrNotExist", err)
			}
			if err := files.CheckDir(ctx, root); err != nil {
				t.Errorf("CheckDir(%s) = %v", root, err)
			}
		})
	}
}

// ListAfter lists what List's Files holds after a name: hidden files sort
// first, deeper folders are not files, a name equal to after is not after it.
func TestListAfter(t *testing.T) {
	ctx := context.Background()
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			for _, rel := range []string{"p/.b.ids", "p/b", "p/a", "p/c", "p/b/deeper", "pp/x", "p0"} {
				if rel == "p/b/deeper" && files.IsLocal(root) {
					continue // a local folder cannot hold a file and a folder both named b
				}
				writeFile(t, files.Join(root, rel), rel+"\n")
			}
			dir := files.Join(root, "p")
			l, err := files.List(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				after string
				want  []string
			}{{"", []string{".b.ids", "a", "b", "c"}}, {"a", []string{"b", "c"}}, {"a0", []string{"b", "c"}}, {"b", []string{"c"}}, {"c", nil}} {
				got, err := files.ListAfter(ctx, dir, tc.after, 10)
				if err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("ListAfter(%q) = %q, %v; want %q", tc.after, got, err, tc.want)
				}
				if all := slices.DeleteFunc(slices.Clone(l.Files), func(n string) bool { return n <= tc.after }); !slices.Equal(got, all) {
					t.Errorf("ListAfter(%q) = %q, List's files after it %q", tc.after, got, all)
				}
			}
			if got, err := files.ListAfter(ctx, dir, "", 2); err != nil || !slices.Equal(got, []string{".b.ids", "a"}) {
				t.Errorf("ListAfter(\"\", 2) = %q, %v; want the first 2", got, err)
			}
			got, err := files.ListAfter(ctx, files.Join(root, "missing"), "", 10)
			if files.IsLocal(root) {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("ListAfter(missing local folder) = %q, %v; want fs.ErrNotExist", got, err)
				}
			} else if err != nil || len(got) != 0 {
				t.Errorf("ListAfter(missing prefix) = %q, %v; want nothing", got, err)
			}
		})
	}
}

func TestWriteFileFailedRenderLeavesNothing(t *testing.T) {
	ctx := context.Background()
	for name, root := range roots(t) {
		t.Run(name, func(t *testing.T) {
			if files.IsLocal(root) {
				if err := os.MkdirAll(root, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := files.Join(root, "report.md")
			boom := errors.New("boom")
			err := files.WriteFile(ctx, path, func(w io.Writer) error {
				io.WriteString(w, "half")
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("WriteFile error = %v, want boom", err)
			}
			if _, err := files.Size(ctx, path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after a failed render, Size = %v; want not found", err)
			}
			l, _ := files.List(ctx, root)
			if len(l.Files) != 0 {
				t.Errorf("after a failed render the folder holds %v", l.Files)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/tmp/raw", true},
		{"gs://b/raw", true},
		{"s3://b/raw", true},
		{"s3://b/raw*", false},
		{"memfs://raw", true},
		{"gs://b/raw*", false},
		{"gs://b/r[aw", false},
		{"hdfs://nn/raw", false},
		{"", false},
	} {
		if err := files.Check(tc.path); (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tc.path, err, tc.ok)
		}
	}
}

func TestCheckDirLocal(t *testing.T) {
	dir := t.TempDir()
	if err := files.CheckDir(context.Background(), filepath.Join(dir, "nope")); err == nil {
		t.Error("CheckDir(missing folder) = nil")
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if err := files.CheckDir(context.Background(), f); err == nil {
		t.Error("CheckDir(file) = nil")
	}
}
