package sources

import (
	"context"
	"io"
	"sync"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// openFiles keeps, per partition, the remote file a reader's call ended in,
// open at the claimed mark: Beam's filesystems stream an object from its
// start only, so reopening it every call would be quadratic in its size. A
// cache in the DoFn instance; local files are seeked instead.
type openFiles struct {
	mu   sync.Mutex
	m    map[string]openFile
	hits int // for tests
}

type openFile struct {
	path string
	lr   *rawlog.Reader
	c    io.Closer
}

func newOpenFiles() *openFiles { return &openFiles{m: map[string]openFile{}} }

// open returns a line reader on path at mark: the kept one, else a newly
// opened file. o may be nil.
func (o *openFiles) open(partition, path string, mark rawlog.Mark, maxLine int) (*rawlog.Reader, io.Closer, error) {
	if o != nil {
		o.mu.Lock()
		e, ok := o.m[partition]
		delete(o.m, partition)
		if ok && e.path == path && e.lr.Mark() == mark {
			o.hits++
			o.mu.Unlock()
			return e.lr, e.c, nil
		}
		o.mu.Unlock()
		if ok {
			e.c.Close()
		}
	}
	f, err := files.Open(context.Background(), path, mark.Offset)
	if err != nil {
		return nil, nil, err
	}
	return rawlog.NewReaderAt(f, maxLine, mark), f, nil
}

// keep keeps a remote file's reader for the next call, or closes it.
func (o *openFiles) keep(partition, path string, lr *rawlog.Reader, c io.Closer) {
	if o == nil || files.IsLocal(path) {
		c.Close()
		return
	}
	o.mu.Lock()
	old, ok := o.m[partition]
	o.m[partition] = openFile{path: path, lr: lr, c: c}
	o.mu.Unlock()
	if ok {
		old.c.Close()
	}
}

func (o *openFiles) closeAll() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, e := range o.m {
		e.c.Close()
		delete(o.m, p)
	}
}
