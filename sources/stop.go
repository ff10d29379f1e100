package sources

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/internal/files"
)

// StopSignal is the graceful-stop request of one run, visible to every
// worker: an object "stop-<Token>" in the control folder Dir (local or
// scheme://). The launcher writes it (Request); readers see it (Watch) and
// keep resuming without finishing their restriction (see the package doc).
// Each run draws a new Token, so an old stop object never stops a new run.
// The zero StopSignal is no signal.
type StopSignal struct {
	Dir, Token string
}

// Name prefixes of the stop and probe objects, and the bounds of one look
// for the stop object and of the probe (a store that hangs fails the start).
const (
	stopPrefix       = "stop-"
	probePrefix      = "probe-"
	stopCheckTimeout = 10 * time.Second
	probeTimeout     = 30 * time.Second
)

// NewStopSignal returns the signal of a new run in the control folder dir:
// its token is the start time (UTC, for a human) and 64 random bits.
func NewStopSignal(dir string) StopSignal {
	var b [8]byte
	rand.Read(b[:])
	return StopSignal{Dir: dir, Token: time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])}
}

// Enabled reports whether s names a stop object at all.
func (s StopSignal) Enabled() bool { return s.Dir != "" && s.Token != "" }

// Path is the stop object of s's run.
func (s StopSignal) Path() string { return files.Join(s.Dir, stopPrefix+s.Token) }

// Validate refuses a signal whose object could not be named: a control
// folder no filesystem serves, or a token that is not a plain name. It makes
// no client (a dry run validates and contacts nothing); Prepare does.
func (s StopSignal) Validate() error {
	if !s.Enabled() {
		return nil
	}
	if err := files.CheckName(s.Dir); err != nil {
		return fmt.Errorf("control folder %s: %w", s.Dir, err)
	}
	if strings.ContainsAny(s.Token, "/\\*?[ ") || s.Token == "." || s.Token == ".." {
		return fmt.Errorf("stop token %q: want a plain name", s.Token)
	}
	return nil
}

// Prepare creates a local control folder, or an object store's client (an
// object store needs no folder): one that cannot be made fails the start.
func (s StopSignal) Prepare() error {
	switch {
	case !s.Enabled():
		return nil
	case !files.IsLocal(s.Dir):
		return files.Check(s.Dir)
	}
	return os.MkdirAll(s.Dir, 0o755)
}

// ProbePath is the object Probe writes and removes, beside the stop object.
func (s StopSignal) ProbePath() string { return files.Join(s.Dir, probePrefix+s.Token) }

// Probe checks before the run that the stop object can be written, by
// writing and removing a probe object: a read-only control folder would
// otherwise show only at the stop, as a cancel.
func (s StopSignal) Probe(ctx context.Context) error {
	if !s.Enabled() {
		return nil
	}
	if err := s.Prepare(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	path := s.ProbePath()
	if err := files.Write(ctx, path, fmt.Appendf(nil, "write probe of run %s %s: the graceful stop writes here\n", s.Token, time.Now().UTC().Format(time.RFC3339))); err != nil {
		return err
	}
	if err := files.Remove(ctx, path); err != nil {
		slog.Warn("removing the control folder's write probe; it stays, and nothing reads it", "path", path, "err", err)
	}
	return nil
}

// Request writes the stop object.
func (s StopSignal) Request(ctx context.Context) error {
	if !s.Enabled() {
		return errors.New("no control folder: the readers cannot be asked to stop")
	}
	if err := s.Prepare(); err != nil {
		return err
	}
	return files.Write(ctx, s.Path(), fmt.Appendf(nil, "stop requested %s\n", time.Now().UTC().Format(time.RFC3339)))
}

// Requested reports whether the stop object of s's run exists.
func (s StopSignal) Requested(ctx context.Context) (bool, error) {
	if !s.Enabled() {
		return false, nil
	}
	_, err := files.Size(ctx, s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Clear removes the stop object once the run has ended, and a local control
// folder left empty. A stop object left behind stops no other run.
func (s StopSignal) Clear(ctx context.Context) error {
	if !s.Enabled() {
		return nil
	}
	if err := files.Remove(ctx, s.Path()); err != nil {
		return err
	}
	if files.IsLocal(s.Dir) {
		_ = os.Remove(s.Dir) // fails, as meant, while it holds anything
	}
	return nil
}

// Watch returns a reader's view of the signal, which looks for the stop
// object at most once per every, and never again once it has seen it.
func (s StopSignal) Watch(every time.Duration) *StopWatch {
	return &StopWatch{signal: s, every: every, now: time.Now}
}

// StopWatch is a reader's cached view of its run's StopSignal, held by a
// DoFn instance; losing it costs one more look.
type StopWatch struct {
	signal StopSignal
	every  time.Duration
	now    func() time.Time

	mu      sync.Mutex
	next    time.Time // no look before this
	stopped bool
}

// Stopped reports whether the run's readers must stop. Called for every
// line, it looks at most once per interval; a failed look counts as "not yet".
func (w *StopWatch) Stopped() bool {
	if w == nil || !w.signal.Enabled() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.stopped || now.Before(w.next) {
		return w.stopped
	}
	w.next = now.Add(w.every)
	ctx, cancel := context.WithTimeout(context.Background(), stopCheckTimeout)
	defer cancel()
	stopped, err := w.signal.Requested(ctx)
	if err != nil {
		slog.Warn("looking for the stop request failed; looking again after the poll interval", "path", w.signal.Path(), "err", err)
	}
	w.stopped = stopped
	return stopped
}
