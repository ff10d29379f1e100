// Package files is where the project reads, lists and writes paths, through
// Beam's io/filesystem: local paths, gs:// (with internal/files/gcs imported),
// s3://, and memfs:// in tests.
//
// Object stores have no folders and no appends: a folder is a prefix, a
// subfolder the next segment of the object names under it, and a file an
// immutable object that appears whole when its upload completes.
package files

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // plain paths
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs" // memfs:// (tests)

	"github.com/revenue-stream/hourly/model"
)

// IsLocal reports whether path has no scheme://.
func IsLocal(path string) bool { return !strings.Contains(path, "://") }

// Join joins path elements: filepath.Join for a local path, "/" for a
// scheme:// one (filepath.Join would turn "gs://" into "gs:/").
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

// globChars are what Beam's List reads as a pattern, with no escape: a
// remote folder's name must not hold them.
const globChars = "*?["

// filesystems caches the clients (Beam filesystems and Stores' range
// clients) per name and endpoint environment: a client per call would cost
// a credentials look-up each time.
var filesystems sync.Map

// endpointEnv points clients at another server (the emulators of tests).
var endpointEnv = []string{"STORAGE_EMULATOR_HOST", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}

func filesystemFor(path string) (filesystem.Interface, error) {
	return Client(scheme(path), func() (filesystem.Interface, error) { return newFilesystem(path) })
}

// Client returns the process's client named name for the current endpoint
// environment, created by create the first time (Stores' range clients too:
// Beam's filesystems keep theirs unexported).
func Client[C any](name string, create func() (C, error)) (C, error) {
	key := name
	for _, e := range endpointEnv {
		key += "\x00" + os.Getenv(e)
	}
	if c, ok := filesystems.Load(key); ok {
		return c.(C), nil
	}
	c, err := create()
	if err != nil {
		return c, err
	}
	prev, loaded := filesystems.LoadOrStore(key, c)
	if closer, ok := any(c).(interface{ Close() error }); ok && loaded {
		closer.Close() // another caller's client won the race
	}
	return prev.(C), nil
}

// newFilesystem creates the filesystem for path's scheme. Beam's s3
// filesystem panics on a bad AWS configuration; that becomes an error.
func newFilesystem(path string) (f filesystem.Interface, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("%s filesystem: %v", scheme(path), r)
		}
	}()
	// The client outlives any one call: no call's context.
	if f, err = filesystem.New(context.Background(), path); err != nil {
		return nil, cmp.Or(unimported(scheme(path)), err)
	}
	return f, nil
}

// CheckName refuses a path that cannot name a folder, making no client (a dry run contacts
// nothing): an unknown scheme, a store this binary does not import, or glob characters in a
// remote path. Callers name the path in the error.
func CheckName(path string) error {
	if strings.TrimSpace(path) == "" {
		return errors.New("empty path")
	}
	if IsLocal(path) {
		return nil
	}
	if s := scheme(path); !beamServes(path) {
		served := append([]string{"local paths"}, append(slices.Sorted(maps.Keys(stores)), "memfs://")...)
		return cmp.Or(unimported(s), fmt.Errorf("no filesystem serves %s paths (this build serves %s and %s)", s, strings.Join(served[:len(served)-1], ", "), served[len(served)-1]))
	}
	if strings.ContainsAny(path, globChars) {
		return fmt.Errorf("a %s path must not contain any of %q", scheme(path), globChars)
	}
	return nil
}

// beamServes reports whether Beam has a filesystem registered for path's scheme, making no client.
func beamServes(path string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	filesystem.ValidateScheme(path) // panics for a scheme no filesystem serves
	return true
}

// Check is CheckName, then makes the path's client (looking up its credentials: GCS asks the
// metadata server), so that a client that cannot be made is refused before any work.
func Check(path string) error {
	if err := CheckName(path); err != nil || IsLocal(path) {
		return err
	}
	_, err := filesystemFor(path)
	return err
}

func scheme(path string) string {
	if i := strings.Index(path, "://"); i > 0 {
		return path[:i] + "://"
	}
	return "local"
}

// notExist marks the remote filesystems' not-found errors (Store.NotExist)
// as fs.ErrNotExist.
func notExist(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range stores {
		if s.NotExist(err) {
			return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
	}
	return err
}

// Open opens a file for reading at byte offset. A local file is seeked; a
// remote object, streamed from its start only, is skipped to offset, or not
// downloaded at all when nothing lies past offset (a follower polling).
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

// List lists the files and subfolders directly inside dir (names only). A
// missing local folder is an error wrapping fs.ErrNotExist; a remote prefix
// without objects is an empty listing.
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
	// A subfolder is the first segment of a deeper object's name (or of a
	// placeholder "raw/p0/"); a file's name has none to cut (* stops at "/").
	var l Listing
	for _, g := range []struct {
		glob string
		to   *[]string
	}{{"*", &l.Files}, {"*/*", &l.Dirs}} {
		names, err := f.List(ctx, prefix+g.glob)
		if err != nil {
			return Listing{}, notExist(err)
		}
		for _, n := range names {
			if name, _, _ := strings.Cut(strings.TrimPrefix(n, prefix), "/"); name != "" {
				*g.to = append(*g.to, name)
			}
		}
	}
	slices.Sort(l.Files)
	slices.Sort(l.Dirs)
	l.Dirs = slices.Compact(l.Dirs)
	return l, nil
}

// ListAfter is the first limit of List's Files that sort after after (all
// for ""). On a registered object store (gs://, s3://) it is one listing
// that starts at after and stops at limit, so polling a folder that only
// grows costs what is new in it, up to limit; a missing local folder is an
// error wrapping fs.ErrNotExist.
func ListAfter(ctx context.Context, dir, after string, limit int) ([]string, error) {
	var names []string
	if st, ok := stores[scheme(dir)]; ok {
		if err := CheckName(dir); err != nil { // the store's own client lists, not Beam's
			return nil, err
		}
		bucket, prefix, _ := strings.Cut(strings.TrimPrefix(dir, scheme(dir)), "/")
		if prefix = strings.TrimSuffix(prefix, "/"); prefix != "" {
			prefix += "/"
		}
		var err error
		if names, err = st.ListFrom(ctx, bucket, prefix, prefix+after, limit); err != nil {
			return nil, notExist(err)
		}
	} else {
		l, err := List(ctx, dir)
		if err != nil {
			return nil, err
		}
		names = l.Files
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n <= after || strings.Contains(n, "/") })
	slices.Sort(names)
	return names[:min(len(names), limit)], nil
}

// listLocal reads a local folder itself: Beam's local List is
// filepath.Glob, which cannot tell a folder from a file and reads [ ] * ?
// in names as a pattern.
func listLocal(dir string) (Listing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Listing{}, err
	}
	var l Listing
	for _, e := range entries {
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 { // followed; a dangling link is skipped
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if os.IsNotExist(err) {
				continue
			} else if err != nil {
				return Listing{}, err
			}
			mode = fi.Mode().Type()
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

// CheckDir checks that dir can be read as a folder: a local one exists and
// is a folder; a remote one is listable.
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

// WriteFile writes what render produces to path as Write does: rendered
// first, so that no reader ever sees half of it.
func WriteFile(ctx context.Context, path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	return Write(ctx, path, buf.Bytes())
}

// Write writes data to path so that no reader ever sees half of it, durably
// once it returns: a local file is written beside its final name, fsynced
// and renamed into place; a remote object is uploaded whole (it appears when
// the upload completes).
func Write(ctx context.Context, path string, data []byte) error {
	if IsLocal(path) {
		return writeLocal(path, data)
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
	if _, err := w.Write(data); err != nil {
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
	// The rename is durable once its folder is: what was written before an
	// acknowledgement must survive a power cut.
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fsync %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// SyncDir flushes a local folder's entries (names created, renamed or
// removed in it) to disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Remove deletes the file at path. A file that is not there is no error:
// callers remove what they wrote and may run twice.
func Remove(ctx context.Context, path string) error {
	if IsLocal(path) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	f, err := filesystemFor(path)
	if err != nil {
		return err
	}
	r, ok := f.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("remove %s: the %s filesystem cannot remove files", path, scheme(path))
	}
	if err := notExist(r.Remove(ctx, path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// Store is what this package needs of an object store beyond Beam's
// filesystem for its scheme: ranged reads (ReadRanges), listings that start
// at a name (ListAfter) and its not-found errors (as fs.ErrNotExist).
type Store struct {
	// Ranges opens an object (a path's bucket and object name) for ranged
	// reads: open streams one range's bytes, from a ranged request of its own.
	Ranges func(ctx context.Context, bucket, object string) (open func(model.LineRef) (io.ReadCloser, error), err error)
	// ListFrom is one listing of the first limit objects directly under
	// prefix ("" or ending in "/") after the name start: their names
	// without prefix, in order.
	ListFrom func(ctx context.Context, bucket, prefix, start string, limit int) ([]string, error)
	// NotExist reports whether err says that an object or its bucket does
	// not exist.
	NotExist func(err error) bool
}

// stores holds the registered Stores by scheme ("gs://"): written only by
// the inits that call RegisterStore, so read without a lock.
var stores = map[string]Store{}

// storePackages names the packages serving a scheme this package does not
// import (transforms and pipeline must not link the GCS or AWS clients), for
// the error of a binary that did not import them.
var storePackages = map[string]string{
	"gs://": "github.com/revenue-stream/hourly/internal/files/gcs",
	"s3://": "github.com/revenue-stream/hourly/internal/files/s3",
}

// RegisterStore registers the Store of scheme ("gs", "s3"), from the init of
// the package that also imports Beam's filesystem of the scheme. A second
// registration panics.
func RegisterStore(scheme string, s Store) {
	if s.Ranges == nil || s.ListFrom == nil || s.NotExist == nil {
		panic(fmt.Sprintf("files.RegisterStore %q: incomplete Store", scheme))
	}
	if _, dup := stores[scheme+"://"]; dup {
		panic(fmt.Sprintf("files.RegisterStore %q: registered twice", scheme))
	}
	stores[scheme+"://"] = s
}

// unimported is the error of a scheme ("gs://") whose Store's package this
// binary does not import, or nil.
func unimported(scheme string) error {
	if _, ok := stores[scheme]; ok || storePackages[scheme] == "" {
		return nil
	}
	return fmt.Errorf("no filesystem serves %s paths in this binary: import _ %q in its main package", scheme, storePackages[scheme])
}
