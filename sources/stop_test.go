package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/revenue-stream/hourly/internal/files"
)

// TestStopSignalNaming: each run's stop object is named for its own token,
// inside the control folder, and two runs never share a token.
func TestStopSignalNaming(t *testing.T) {
	a, b := NewStopSignal("gs://bucket/raw/_control"), NewStopSignal("gs://bucket/raw/_control")
	if a.Token == b.Token {
		t.Fatalf("two runs drew the same token %q", a.Token)
	}
	if !strings.HasPrefix(a.Path(), "gs://bucket/raw/_control/stop-") || !strings.HasSuffix(a.Path(), a.Token) {
		t.Errorf("stop object %q: want gs://bucket/raw/_control/stop-<token>", a.Path())
	}
	if err := a.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, bad := range []StopSignal{{Dir: "hdfs://x/c", Token: "t"}, {Dir: "c", Token: "../t"}, {Dir: "c", Token: "a*b"}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) accepted it", bad)
		}
	}
	var none StopSignal
	if none.Enabled() || none.Watch(time.Second).Stopped() {
		t.Error("the zero signal stops readers")
	}
	if none.Request(context.Background()) == nil {
		t.Error("the zero signal accepted a stop request")
	}
}

// TestStopSignalStaleness: a stop object left by an earlier run (or
// written for another) never stops this run's readers; this run's stops
// them on the first look a poll interval after the last one, and the answer
// is kept.
func TestStopSignalStaleness(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "_control")
	old, run := NewStopSignal(dir), NewStopSignal(dir)
	if err := run.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := old.Request(ctx); err != nil { // an earlier run's, never cleared
		t.Fatal(err)
	}

	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := run.Watch(time.Second)
	w.now = func() time.Time { return clock }
	if w.Stopped() {
		t.Fatal("an earlier run's stop object stopped this run")
	}
	if err := run.Request(ctx); err != nil {
		t.Fatal(err)
	}
	// The negative answer holds for a poll interval: one look per poll.
	clock = clock.Add(999 * time.Millisecond)
	if w.Stopped() {
		t.Fatal("looked again within the poll interval")
	}
	clock = clock.Add(time.Millisecond)
	if !w.Stopped() {
		t.Fatal("this run's stop object not seen a poll interval after the last look")
	}
	// Seen once, kept: the object may go (Clear) without restarting the
	// readers.
	if err := run.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if !w.Stopped() {
		t.Fatal("the positive answer was not kept")
	}
	if ok, err := run.Requested(ctx); ok || err != nil {
		t.Errorf("after Clear: requested %v, %v; want false, nil", ok, err)
	}
	// Clear leaves the other run's object, and so the folder.
	if ok, err := old.Requested(ctx); !ok || err != nil {
		t.Errorf("Clear removed another run's object: %v, %v", ok, err)
	}
	if err := old.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the empty local control folder stays: %v", err)
	}
}

// TestStopSignalMemfs: the object is written and seen through Beam's
// filesystem, as on gs://.
func TestStopSignalMemfs(t *testing.T) {
	s := NewStopSignal("memfs://stop-test/_control")
	w := s.Watch(0)
	if w.Stopped() {
		t.Fatal("stopped before the request")
	}
	if err := s.Request(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !w.Stopped() {
		t.Fatal("request not seen")
	}
}

// TestStopSignalProbe: the probe writes beside the stop object and leaves
// nothing behind where the control folder can be written (local, memfs),
// and fails, naming the object, where it cannot (a local path under a
// regular file, a read-only folder when not root, a store that refuses
// writes as a read-only GCS bucket does). A probe object that cannot be
// removed is no failure, and stops no reader.
func TestStopSignalProbe(t *testing.T) {
	ctx := context.Background()

	t.Run("local", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "raw", "_control") // made by the probe
		s := NewStopSignal(dir)
		if err := s.Probe(ctx); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 0 {
			t.Errorf("control folder after the probe: %v, %v; want it empty", entries, err)
		}
	})

	t.Run("memfs", func(t *testing.T) {
		dir := "memfs://" + t.Name() + "/_control"
		s := NewStopSignal(dir)
		if err := s.Probe(ctx); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		wantMemfsEmpty(t, dir, "after the probe")
		// The stop object goes too once the run has ended: memfs's own keys
		// are listed, not looked up through its normalising Size.
		if err := s.Request(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Requested(ctx); !ok || err != nil {
			t.Fatalf("Requested after Request: %v, %v", ok, err)
		}
		if err := s.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		wantMemfsEmpty(t, dir, "after Clear")
	})

	t.Run("local path under a regular file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "raw")
		if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := NewStopSignal(filepath.Join(file, "_control")).Probe(ctx)
		if err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("Probe under a regular file: %v; want an error naming %s", err, file)
		}
	})

	t.Run("read-only local folder", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into a 0555 folder; the cases above and below fail without it")
		}
		dir := filepath.Join(t.TempDir(), "_control")
		if err := os.Mkdir(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := NewStopSignal(dir).Probe(ctx); err == nil {
			t.Error("Probe of a 0555 folder succeeded")
		}
	})

	t.Run("store refusing writes", func(t *testing.T) {
		dir := roScheme + "://bucket/raw/_control"
		s := NewStopSignal(dir)
		err := s.Probe(ctx)
		if err == nil || !strings.Contains(err.Error(), s.ProbePath()) || !strings.Contains(err.Error(), "403") {
			t.Errorf("Probe: %v; want the store's 403 naming %s", err, s.ProbePath())
		}
	})

	t.Run("store refusing removal", func(t *testing.T) {
		dir := noRemoveScheme + "://bucket/raw/_control"
		s := NewStopSignal(dir)
		if err := s.Probe(ctx); err != nil {
			t.Fatalf("Probe: %v; a probe that cannot be removed is no failure", err)
		}
		if _, err := files.Size(ctx, s.ProbePath()); err != nil {
			t.Fatalf("the probe object %s should have stayed: %v", s.ProbePath(), err)
		}
		if s.Watch(0).Stopped() {
			t.Error("the leftover probe object stopped the run's readers")
		}
		if strings.HasPrefix(filepath.Base(s.ProbePath()), stopPrefix) {
			t.Errorf("probe object %s is named like a stop object", s.ProbePath())
		}
	})
}

func wantMemfsEmpty(t *testing.T, dir, when string) {
	t.Helper()
	left, err := memfs.New(context.Background()).List(context.Background(), dir+"/*")
	if err != nil || len(left) != 0 {
		t.Errorf("%s: %s holds %v (%v); want nothing", when, dir, left, err)
	}
}

// The test stores: roScheme refuses every write when it is committed, as
// GCS does for an account without storage.objects.create (a 403 on the
// upload); noRemoveScheme keeps writes but refuses deletes (an account
// with create but not delete).
const (
	roScheme       = "stoptest-readonly"
	noRemoveScheme = "stoptest-noremove"
)

func init() {
	filesystem.Register(roScheme, func(context.Context) filesystem.Interface { return &guardedStore{readOnly: true} })
	noRemove := &guardedStore{objects: map[string][]byte{}}
	filesystem.Register(noRemoveScheme, func(context.Context) filesystem.Interface { return noRemove })
}

type guardedStore struct {
	readOnly bool
	mu       sync.Mutex
	objects  map[string][]byte
}

func (g *guardedStore) Close() error { return nil }

func (g *guardedStore) List(context.Context, string) ([]string, error) { return nil, nil }

func (g *guardedStore) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if data, ok := g.objects[name]; ok {
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return nil, fs.ErrNotExist
}

func (g *guardedStore) Size(_ context.Context, name string) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if data, ok := g.objects[name]; ok {
		return int64(len(data)), nil
	}
	return -1, fs.ErrNotExist
}

func (g *guardedStore) OpenWrite(_ context.Context, name string) (io.WriteCloser, error) {
	return &guardedWriter{store: g, name: name}, nil
}

func (g *guardedStore) Remove(_ context.Context, name string) error {
	return fmt.Errorf("remove %s: 403 forbidden: no storage.objects.delete", name)
}

type guardedWriter struct {
	store *guardedStore
	name  string
	buf   bytes.Buffer
}

func (w *guardedWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

// Close commits the write, as a GCS upload does: that is where a bucket
// the account may not write says so.
func (w *guardedWriter) Close() error {
	if w.store.readOnly {
		return errors.New("googleapi: Error 403: caller does not have storage.objects.create access, forbidden")
	}
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.objects[w.name] = w.buf.Bytes()
	return nil
}
