package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/watermark"
)

// reader reads one partition for one ProcessElement call, in plain Go, so
// the reading rules are tested without a runner.
type reader struct {
	dir, partition string
	o              FolderOptions // with defaults
	horizon        int64         // the call ends once the partition watermark reaches it (flow.ReadAhead.Horizon)
	source         string        // keys the pending-tail registry
	// final is the graceful stop's last pass: finish the current file,
	// unterminated last line included, and read no other file.
	final bool

	now   func() time.Time
	stop  func() bool
	claim func(restriction) bool
	emit  func(model.Record)
	// checkpoint receives the state each time a file has been read.
	checkpoint func(model.Checkpoint)
	log        *slog.Logger

	// rest is the state reached so far, claimed with each record.
	rest    restriction
	stamper *rawlog.Stamper
	open    *openFiles // remote files kept open between calls (nil: none)
	emitted int
	path    string // the file being read, for the records' refs
}

// readerClock gives a partition's reader its clock; tests replace it
// (calls_test.go).
var readerClock = func(dir, partition string) func() time.Time { return time.Now }

// newReader resumes a partition from rest.
func newReader(dir, partition string, rest restriction, o FolderOptions) *reader {
	o = o.withDefaults()
	return &reader{
		dir: dir, partition: partition, o: o, horizon: math.MaxInt64,
		now: readerClock(dir, partition), stop: func() bool { return false },
		claim: func(restriction) bool { return true }, emit: func(model.Record) {},
		checkpoint: func(model.Checkpoint) {},
		log:        slog.Default().With("source", "folder", "partition", partition),
		rest:       rest.Clone(),
		stamper:    rawlog.ResumeStamper(o.Watermark, o.Event, rest.State),
	}
}

// run reads until a budget is used up, the data runs out, the partition
// ends (replay) or a stop is requested; the caller claims the final state.
// An I/O error fails a replay; a follower logs it and retries at the next
// poll, since it is most often transient and a silent partition is safe. The
// failed call counts as activity, as a Pub/Sub source's failed pull does: an
// unreachable folder says nothing about its producers, and turning idle would
// hand the runner processing time and close the windows its backlog fills. A
// folder that is gone (fs.ErrNotExist) may go idle.
func (r *reader) run() (sdfread.Outcome, error) {
	out, err := r.read()
	if err != nil && r.o.Follow {
		r.log.Error("source partition read failed; trying again at the next poll", "error", err)
		if !errors.Is(err, fs.ErrNotExist) {
			r.stamper.Partition().Touch(r.now().UnixMilli())
		}
		return sdfread.CaughtUp, nil
	}
	return out, err
}

func (r *reader) read() (sdfread.Outcome, error) {
	start := r.now()
	for {
		if r.stop() || (r.final && r.rest.File == "") {
			return sdfread.Stopped, nil
		}
		if r.rest.File == "" {
			next, err := r.nextFile("")
			if err != nil {
				return 0, err
			}
			if next == "" {
				if r.o.Follow {
					return sdfread.CaughtUp, nil
				}
				r.rest.Closed = true
				return sdfread.Finished, nil
			}
			r.rest.File, r.rest.Offset, r.rest.Line = next, 0, 0
		}
		out, done, err := r.readFile(start)
		if err != nil || !done {
			return out, err
		}
		r.rest.markRead(r.rest.File)
		r.checkpoint(model.Checkpoint{Partition: r.partition, File: r.rest.File,
			Offset: r.rest.Offset, Line: r.rest.Line, MaxValid: r.rest.MaxValid})
		r.rest.File, r.rest.Offset, r.rest.Line = "", 0, 0
	}
}

// readFile reads the current file from the restriction's mark. done: move
// on to the next file; otherwise out says why the call ends.
func (r *reader) readFile(start time.Time) (out sdfread.Outcome, done bool, err error) {
	path := files.Join(rawlog.PartitionDir(r.dir, r.partition), r.rest.File)
	r.path = path
	lr, f, err := r.open.open(r.partition, path, rawlog.Mark{Offset: r.rest.Offset, Line: r.rest.Line}, r.o.Event.MaxLine)
	if errors.Is(err, fs.ErrNotExist) { // removed under the reader (retention)
		r.log.Error("source file disappeared while being read; moving on", "file", r.rest.File, "line", r.rest.Line)
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("source partition %q: %w", r.partition, err)
	}
	defer func() {
		// Kept only mid-file: at its end a follower waits for the file to
		// change, which a remote stream opened earlier never shows (an
		// object store's append is a new object); reopened at the mark, an
		// unchanged file costs a size look.
		if err == nil && !done && out == sdfread.Budget {
			r.open.keep(r.partition, path, lr, f) // the next call goes on from here
			return
		}
		f.Close()
	}()
	leaving := false
	for {
		if out, end := sdfread.Ended(r.stop(), r.emitted, r.o.MaxPerCall, r.now().Sub(start), callBudget); end {
			return out, false, nil
		}
		if r.stamper.Watermark() >= r.horizon {
			return sdfread.Budget, false, nil
		}
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			m := lr.Mark()
			r.rest.Offset, r.rest.Line = m.Offset, m.Line // blank lines at the end
			newest := false
			if r.o.Follow && !leaving && !r.final {
				// The newest file may still grow: stay while no other waits.
				next, err := r.nextFile(r.rest.File)
				if err != nil {
					return 0, false, err
				}
				if next != "" {
					// This file is complete: read what was appended before
					// the later file appeared, then leave.
					leaving = true
					continue
				}
				if lr.Pending() == 0 || !r.settled(m.Offset+lr.Pending()) {
					return sdfread.CaughtUp, false, nil
				}
				newest = true
			}
			// Nothing more will come: an unterminated last line is a line.
			if lr.Pending() > 0 {
				r.log.Info("source file ends in a line without a newline; reading it as a line",
					"position", rawlog.Position(r.partition, r.rest.File, m.Line+1), "bytes", lr.Pending())
				tl, ok := lr.Tail()
				if ok && !r.record(tl) {
					return sdfread.Lost, false, nil
				}
				m = lr.Mark()
				r.rest.Offset, r.rest.Line = m.Offset, m.Line
			}
			tails.Delete(tailKey{source: r.source, partition: r.partition, file: r.rest.File}) // no tail pending
			switch {
			case r.final:
				return sdfread.Stopped, false, nil
			case newest:
				return sdfread.CaughtUp, false, nil // it stays the current file
			}
			return 0, true, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("source partition %q: %s: %w", r.partition, path, err)
		}
		if !r.record(l) {
			return sdfread.Lost, false, nil
		}
	}
}

// settled reports whether the current file, size bytes long and ending in a
// line without a newline, has kept that size for the settle time (first
// sightings are kept in the tails registry).
func (r *reader) settled(size int64) bool {
	now := r.now().UnixMilli()
	k := tailKey{source: r.source, partition: r.partition, file: r.rest.File}
	v, ok := tails.Load(k)
	if !ok || v.(tailSeen).size != size {
		if !ok {
			r.log.Info("source file ends in a line without a newline; pending until the file stops changing",
				"position", rawlog.Position(r.partition, r.rest.File, r.rest.Line+1), "settle", r.o.Settle)
		}
		tails.Store(k, tailSeen{size: size, since: now})
		return r.o.Settle <= 0
	}
	return now-v.(tailSeen).since >= r.o.Settle.Milliseconds()
}

// record stamps, claims and emits one line; false: the claim failed.
func (r *reader) record(l rawlog.Line) bool {
	rec := l.Record(r.partition, rawlog.Position(r.partition, r.rest.File, l.No), r.path, r.now().UnixMilli())
	r.stamper.StampRecord(&rec)
	r.rest.State = r.stamper.Partition().State()
	r.rest.Offset, r.rest.Line = l.End, l.No
	if !r.claim(r.rest) {
		return false
	}
	r.emit(rec)
	r.emitted++
	return true
}

// nextFile returns the lexically smallest unread file other than current,
// or "" when there is none. It also raises the floor of remembered names and
// warns about files that appeared out of lexical order.
func (r *reader) nextFile(current string) (string, error) {
	files, err := rawlog.ListFiles(r.dir, r.partition)
	if err != nil {
		return "", fmt.Errorf("source partition %q: %w", r.partition, err)
	}
	below, _ := slices.BinarySearch(files, r.rest.Floor)
	switch {
	case r.rest.FloorFiles < 0: // a start position: count what lies below it
		r.rest.FloorFiles = below
	case below != r.rest.FloorFiles:
		if below > r.rest.FloorFiles {
			r.log.Error("files appeared far below the files already read and cannot be told from read ones; the stream does not read them (reconcile does)",
				"count", below-r.rest.FloorFiles, "below", r.rest.Floor)
		}
		r.rest.FloorFiles = below // also after a clean-up removed old files
	}
	r.rest.prune(files)
	for _, name := range files[below:] {
		if name == current || r.rest.isRead(name) {
			continue
		}
		// Warn only when choosing between files, not at a follower's check.
		if last := r.rest.lastRead(); current == "" && name < last {
			r.log.Warn("source file appeared out of lexical order; reading it now",
				"file", name, "after", last)
		}
		return name, nil
	}
	return "", nil
}

// watermarkState adds the watermark state at processing time now to the
// restriction, logs a change of idleness and reports whether the partition
// just went idle; active is the lowest watermark of the other active
// partitions, if any (watermark.Partition.Report).
func (r *reader) watermarkState(now, active int64, anyActive bool) bool {
	var rep watermark.Report
	r.rest.State, rep = sdfread.Report(r.log, "source partition", r.stamper.Partition(), now, active, anyActive, r.o.Watermark.IdleTimeout)
	if rep.ByIdleness && idleLogDue(r.source, now) {
		r.log.Info("every partition is idle: the watermark advances with processing time (--idle-advance=processing-time); open windows may turn FINAL",
			"reported_watermark", watermark.FormatMs(r.rest.Reported), "idle_timeout", r.o.Watermark.IdleTimeout)
	}
	return rep.WentIdle
}

// DefaultSettle is the default --settle: how long a followed file must stay
// unchanged before its last line, written without a newline, is read.
const DefaultSettle = 10 * time.Second

// tails registers the followed files ending in a line without a newline and
// when each size was first seen. A cache: losing it only restarts a wait.
var tails sync.Map // tailKey -> tailSeen

type tailKey struct{ source, partition, file string }

type tailSeen struct {
	size  int64 // bytes of the file when first seen at this size
	since int64 // processing time (ms) of that sighting
}

// PendingTails is the number of followed files whose unterminated last line
// waits to settle, as seen by the readers in this process.
func PendingTails() int {
	n := 0
	tails.Range(func(any, any) bool { n++; return true })
	return n
}

// idleLogEvery is how often, at most, a source logs that its watermark
// advances because every partition is idle.
const idleLogEvery = time.Minute

// idleLogged holds when each source last logged an all-idle advance.
var idleLogged sync.Map // source -> int64 (ms)

// idleLogDue reports whether source may log at now (ms), and if so records it.
func idleLogDue(source string, now int64) bool {
	last, seen := idleLogged.LoadOrStore(source, now)
	return !seen || now-last.(int64) >= idleLogEvery.Milliseconds() && idleLogged.CompareAndSwap(source, last, now)
}

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
