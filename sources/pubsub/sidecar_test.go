package pubsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
)

// flakyFS is memfs under flaky://, whose next sidecar reads fail: at the
// open (failOpen) or after the first bytes (failRead), as a bucket's
// transient error does.
type flakyFS struct{ mem filesystem.Interface }

var failOpen, failRead atomic.Int64

func init() {
	filesystem.Register("flaky", func(ctx context.Context) filesystem.Interface { return flakyFS{memfs.New(ctx)} })
}

func toMem(p string) string   { return "memfs://flaky/" + strings.TrimPrefix(p, "flaky://") }
func fromMem(p string) string { return "flaky://" + strings.TrimPrefix(p, "memfs://flaky/") }

func isSidecar(p string) bool { return strings.HasPrefix(path.Base(p), ".") }

func (f flakyFS) Close() error { return nil }

func (f flakyFS) List(ctx context.Context, glob string) ([]string, error) {
	names, err := f.mem.List(ctx, toMem(glob))
	for i, n := range names {
		names[i] = fromMem(n)
	}
	return names, err
}

func (f flakyFS) OpenRead(ctx context.Context, name string) (io.ReadCloser, error) {
	if isSidecar(name) && failOpen.Add(-1) >= 0 {
		return nil, errors.New("503 Service Unavailable (injected)")
	}
	rc, err := f.mem.OpenRead(ctx, toMem(name))
	if err == nil && isSidecar(name) && failRead.Add(-1) >= 0 {
		return brokenReader{rc}, nil
	}
	return rc, err
}

func (f flakyFS) OpenWrite(ctx context.Context, name string) (io.WriteCloser, error) {
	return f.mem.OpenWrite(ctx, toMem(name))
}

func (f flakyFS) Size(ctx context.Context, name string) (int64, error) {
	return f.mem.Size(ctx, toMem(name))
}

// brokenReader returns a few bytes, then a connection reset.
type brokenReader struct{ io.ReadCloser }

func (b brokenReader) Read(p []byte) (int, error) {
	n, _ := b.ReadCloser.Read(p[:min(len(p), 8)])
	return n, errors.New("connection reset by peer (injected)")
}

// A re-emit whose sidecar read fails (a bucket's transient error) must not
// go on as if the object had no sidecar: the records would lose their
// message-id positions (the audit rows' keys: a second quarantine or
// too-late row for the same message) and their backlog flags (another
// WatermarkBefore, other verdicts). It fails the call, and the retry
// re-emits them as they were first emitted.
func TestReEmitSidecarReadErrorIsNotSilent(t *testing.T) {
	for _, c := range []struct {
		name string
		fail *atomic.Int64
	}{{"open", &failOpen}, {"read", &failRead}} {
		t.Run(c.name, func(t *testing.T) {
			failOpen.Store(0)
			failRead.Store(0)
			e := newEmulator(t, 10*time.Second)
			// memfs is process-wide: a name of its own for each run (-count=N).
			dir := fmt.Sprintf("flaky://archive-%s-%d", t.Name(), time.Now().UnixNano())
			p := newPlainReader(t, e, dir)
			checkpoint := p.rest
			// Published two minutes before the pull: a backlog batch, which
			// holds the watermark.
			p.tweak = func(r *reader) { r.now = aheadBy(2 * time.Minute) }
			e.publish(purchase("A", "2026-11-04T10:15:00Z", "100"), purchase("B", "2026-11-04T11:20:00Z", "50"),
				purchase("C", "2026-11-04T10:30:00Z", "5"))
			p.drain(t)
			first := p.out
			if len(first) != 3 {
				t.Fatalf("emitted %d records, want 3", len(first))
			}

			// The runner restores the checkpoint; the sidecar read fails once.
			q := newPlainReader(t, e, dir)
			q.rest = checkpoint
			c.fail.Store(1)
			if _, _, err := q.call(context.Background()); err == nil {
				t.Logf("the call with a failing sidecar read succeeded")
			} else {
				t.Logf("the call with a failing sidecar read failed (the runner retries it): %v", err)
				q.rest, q.out = checkpoint, nil
			}
			q.drain(t)
			if len(q.out) != len(first) {
				t.Fatalf("re-emitted %d records, want %d", len(q.out), len(first))
			}
			for i, rec := range q.out {
				if rec.Position != first[i].Position || rec.WatermarkBefore != first[i].WatermarkBefore {
					t.Errorf("record %d re-emitted at %s with WatermarkBefore %d; first emitted at %s with %d",
						i, rec.Position, rec.WatermarkBefore, first[i].Position, first[i].WatermarkBefore)
				}
			}
		})
	}
}
