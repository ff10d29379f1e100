// Package files is where the project reads, lists and writes paths: through
// Beam's io/filesystem, so that a path may be a local one or on any
// filesystem Beam serves (gs:// and s3:// in production, memfs:// in tests).
// A worker on another machine reaches a gs:// or s3:// path as the launcher
// does; a local path only when the disk is shared.
//
// Object stores have no folders and no appends. A "folder" there is a prefix
// (gs://b/raw is every object named raw/...), a subfolder is the next path
// segment of the object names under it, and a file is an immutable object
// that appears whole when its upload completes. Readers that follow a folder
// therefore look for new objects, never for growth of an old one.
package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // plain paths
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs" // memfs:// (tests)
)

// IsLocal reports whether path is a local path rather than a scheme://
// path.
func IsLocal(path string) bool { return !strings.Contains(path, "://") }

// Join joins path elements: with the OS separator for a local path, with "/"
// for a scheme:// path (filepath.Join would turn "gs://" into "gs:/").
// Empty and "." elements add nothing.
func Join(dir string, elem ...string) string {
	if IsLocal(dir) {
		return filepath.Join(append([]string{dir}, elem...)...)
	}
	out := strings.TrimSuffix(dir, "/")
	for _, e := range elem {
		if e != "" && e != "." {
			out += "/" + e
		}
	}
	return out
}

// globChars are the characters Beam's List treats as a pattern. A remote
// folder is listed with a pattern built from its name, so they must not
// appear in it (Beam's filesystems have no escape for them).
const globChars = "*?["

// filesystems caches one filesystem per scheme (and emulator endpoint,
// which tests change): creating a GCS or S3 client per call would cost a
// credentials look-up each time. Losing it costs only that.
var filesystems sync.Map

// endpointEnv is the environment that points a client at another server:
// GCS's emulator host, and the AWS SDK's endpoint overrides (which Beam's
// s3 filesystem honours through config.LoadDefaultConfig).
var endpointEnv = []string{"STORAGE_EMULATOR_HOST", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}

func filesystemFor(path string) (filesystem.Interface, error) {
	scheme := "default"
	if i := strings.Index(path, "://"); i > 0 {
		scheme = path[:i]
	}
	key := scheme
	for _, e := range endpointEnv {
		key += "\x00" + os.Getenv(e)
	}
	if f, ok := filesystems.Load(key); ok {
		return f.(filesystem.Interface), nil
	}
	f, err := newFilesystem(path)
	if err != nil {
		return nil, err
	}
	if prev, loaded := filesystems.LoadOrStore(key, f); loaded {
		f.Close()
		return prev.(filesystem.Interface), nil
	}
	return f, nil
}

// newFilesystem creates the filesystem for path's scheme. Beam's s3
// filesystem panics when the AWS configuration cannot be loaded (a
// malformed ~/.aws/config, say); that becomes an error here, so that a bad
// flag or environment is a message, not a crash.
func newFilesystem(path string) (f filesystem.Interface, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%s filesystem: %v", scheme(path), r)
		}
	}()
	// The client outlives any one call, so it must not hold a call's
	// context.
	f, err = filesystem.New(context.Background(), path)
	if err != nil {
		if pkg, ok := storePackages[scheme(path)]; ok && !registered(scheme(path)) {
			return nil, fmt.Errorf("no filesystem serves %s paths in this binary: import _ %q in its main package", scheme(path), pkg)
		}
	}
	return f, err
}

// Check refuses a path that cannot be used as a folder before any work:
// an unknown scheme, or glob characters in a remote path. The message does
// not repeat the path: callers name it with the flag.
func Check(path string) error {
	if strings.TrimSpace(path) == "" {
		return errors.New("empty path")
	}
	if IsLocal(path) {
		return nil
	}
	if _, err := filesystemFor(path); err != nil {
		if _, known := storePackages[scheme(path)]; known || registered(scheme(path)) || scheme(path) == "memfs://" {
			return err // served (or servable), but the client could not be made
		}
		served := append([]string{"local paths"}, append(registeredSchemes(), "memfs://")...)
		return fmt.Errorf("no filesystem serves %s paths (this build serves %s and %s)", scheme(path), strings.Join(served[:len(served)-1], ", "), served[len(served)-1])
	}
	if strings.ContainsAny(path, globChars) {
		return fmt.Errorf("a %s path must not contain any of %q", scheme(path), globChars)
	}
	return nil
}

func scheme(path string) string {
	if i := strings.Index(path, "://"); i > 0 {
		return path[:i] + "://"
	}
	return "local"
}

// notExist marks the not-found errors of the remote filesystems (their
// Store.NotExist) as fs.ErrNotExist, so that callers test for one error
// whatever the scheme.
func notExist(err error) error {
	if err == nil {
		return nil
	}
	missing := false
	stores.Range(func(_, s any) bool {
		missing = s.(Store).NotExist(err)
		return !missing
	})
	if missing {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// Open opens a file for reading at byte offset. A local file is seeked; a
// remote object, which Beam's filesystems only stream from its start, is
// skipped to offset, unless its size says nothing lies past offset (the
// common case of a follower polling the newest file), in which case
// nothing is downloaded.
func Open(ctx context.Context, path string, offset int64) (io.ReadCloser, error) {
	f, err := filesystemFor(path)
	if err != nil {
		return nil, err
	}
	if offset > 0 && !IsLocal(path) {
		size, err := f.Size(ctx, path)
		if err != nil {
			return nil, notExist(err)
		}
		if size <= offset {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
	}
	rc, err := f.OpenRead(ctx, path)
	if err != nil {
		return nil, notExist(err)
	}
	if offset <= 0 {
		return rc, nil
	}
	if s, ok := rc.(io.Seeker); ok {
		if _, err := s.Seek(offset, io.SeekStart); err != nil {
			rc.Close()
			return nil, fmt.Errorf("seek %s to %d: %w", path, offset, err)
		}
		return rc, nil
	}
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil && !errors.Is(err, io.EOF) {
		rc.Close()
		return nil, fmt.Errorf("skip %s to %d: %w", path, offset, err)
	}
	return rc, nil
}

// Size returns a file's size in bytes.
func Size(ctx context.Context, path string) (int64, error) {
	f, err := filesystemFor(path)
	if err != nil {
		return 0, err
	}
	n, err := f.Size(ctx, path)
	return n, notExist(err)
}

// Listing is what a folder holds, each list sorted by name.
type Listing struct {
	Files []string
	Dirs  []string
}

// List lists the files and subfolders directly inside dir (names only).
// A local folder that does not exist is an error wrapping fs.ErrNotExist; a
// remote prefix without objects is an empty listing, as an object store
// cannot tell it from an empty folder.
func List(ctx context.Context, dir string) (Listing, error) {
	if IsLocal(dir) {
		return listLocal(dir)
	}
	if err := Check(dir); err != nil {
		return Listing{}, err
	}
	f, err := filesystemFor(dir)
	if err != nil {
		return Listing{}, err
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var l Listing
	names, err := f.List(ctx, prefix+"*")
	if err != nil {
		return Listing{}, notExist(err)
	}
	for _, n := range names {
		if name := strings.TrimPrefix(n, prefix); name != "" {
			l.Files = append(l.Files, name)
		}
	}
	// A subfolder is the first segment of a deeper object's name, such as a
	// folder placeholder "raw/p0/" (which the console creates).
	deeper, err := f.List(ctx, prefix+"*/*")
	if err != nil {
		return Listing{}, notExist(err)
	}
	for _, n := range deeper {
		name, _, _ := strings.Cut(strings.TrimPrefix(n, prefix), "/")
		if name != "" {
			l.Dirs = append(l.Dirs, name)
		}
	}
	slices.Sort(l.Files)
	slices.Sort(l.Dirs)
	l.Dirs = slices.Compact(l.Dirs)
	return l, nil
}

// listLocal reads a local folder. Beam's local List is filepath.Glob, which
// cannot tell a folder from a file (an empty partition folder would be
// lost) and reads [ ] * ? in names as a pattern, so the local listing reads
// the folder itself.
func listLocal(dir string) (Listing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Listing{}, err
	}
	var l Listing
	for _, e := range entries {
		mode, err := resolve(dir, e)
		if err != nil {
			return Listing{}, err
		}
		switch {
		case mode.IsDir():
			l.Dirs = append(l.Dirs, e.Name())
		case mode.IsRegular():
			l.Files = append(l.Files, e.Name())
		}
	}
	return l, nil // os.ReadDir sorts by name
}

// resolve returns an entry's type, following a symbolic link so that a
// linked-in file or folder is listed like any other. A dangling link is
// skipped, as if it were not there yet.
func resolve(dir string, e fs.DirEntry) (fs.FileMode, error) {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.Type(), nil
	}
	fi, err := os.Stat(filepath.Join(dir, e.Name()))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	return fi.Mode().Type(), nil
}

// CheckDir checks that dir can be read as a folder: a local one must exist
// and be a folder; a remote one must be listable (its bucket exists and
// the credentials reach it).
func CheckDir(ctx context.Context, dir string) error {
	if err := Check(dir); err != nil {
		return err
	}
	if IsLocal(dir) {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return errors.New("folder does not exist")
		case err != nil:
			return err
		case !fi.IsDir():
			return errors.New("not a folder")
		}
		return nil
	}
	_, err := List(ctx, dir)
	return err
}

// WriteFile writes what render produces to path so that no reader ever
// sees half of it: a local file is written beside its final name and
// renamed into place (an older file stays whole until then); a remote
// object appears only when its upload completes, so it is rendered first
// and uploaded whole, and a failed render uploads nothing.
func WriteFile(ctx context.Context, path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	if IsLocal(path) {
		return writeLocal(path, buf.Bytes())
	}
	f, err := filesystemFor(path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := f.OpenWrite(ctx, path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		cancel() // a GCS upload cancelled before Close leaves no object
		w.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeLocal(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	// CreateTemp makes the file 0600; what we write is meant to be shared.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	// Durable once WriteFile returns: the Pub/Sub archive acknowledges on it.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	return nil
}
