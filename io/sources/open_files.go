package sources

import (
	"context"
	"io"
	"sync"

	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/io/rawlog"
)

// openFiles keeps, per partition, the remote file a reader's call ended in,
// still open at the mark the call claimed, for the next call to go on
// with. Beam's filesystems stream an object from its start only, so without
// it every call (MaxPerCall records) would download the object's prefix
// again: quadratic in the object's size. It is a cache in the DoFn
// instance: a call resumed elsewhere (another worker, a split) or at
// another mark opens the file afresh, so losing it costs time only. Local
// files are not kept: they are seeked.
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

// open returns a line reader on path positioned at mark: the kept one if it
// is there, else a newly opened file. o may be nil (nothing is kept).
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

// keep hands back a reader whose call ended inside its file (remote files
// only), or closes it.
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

// closeAll closes every kept file.
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
