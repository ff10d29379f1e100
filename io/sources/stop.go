package sources

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/io/files"
)

// StopSignal is the graceful-stop request of one run, which every worker
// can see wherever it runs: an object named for the run's Token in the
// control folder Dir, on any filesystem Beam's io/filesystem serves (gs://
// in production, a local folder on prism or with --shared-filesystem).
// The launcher writes it (Request) when the run is to stop; the readers of
// that run, folder and Pub/Sub alike, see it (Watch) and then behave as
// follows: a follower finishes the file it is in (its last line read even
// without a newline, SPEC §3) and reads no further file, a Pub/Sub reader
// pulls nothing more (a batch being archived is archived, acknowledged and
// emitted first), and both keep returning ResumeProcessingIn(PollInterval)
// with their watermark unchanged, never finishing their restriction: a
// finished restriction would move the watermark to the end of time and
// write FINAL rows for windows whose correction period has not passed. The
// launcher then waits for the output to settle and cancels the job.
//
// An old stop object never stops a new run: each run draws a new Token
// (NewStopSignal), and a reader looks only for the object named for the
// token its pipeline was built with. A runner that restores the same job
// from a checkpoint keeps the token (it is part of the DoFn's
// configuration), so a stop requested before the restore still holds.
//
// The zero StopSignal is no signal: its readers are stopped only by the
// runner (cancel or drain).
type StopSignal struct {
	// Dir is the control folder: a local path or a scheme:// one.
	Dir string
	// Token names the run (see NewStopSignal).
	Token string
}

// stopPrefix starts every stop object's name: "stop-<token>".
const stopPrefix = "stop-"

// stopCheckTimeout bounds one look for the stop object, so that a filesystem
// that hangs delays a reader by at most that much per poll.
const stopCheckTimeout = 10 * time.Second

// NewStopSignal returns the signal of a new run in the control folder dir:
// its token is the start time (UTC, to the second, for a human reading the
// folder) and 64 random bits, so that two runs never share one.
func NewStopSignal(dir string) StopSignal {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; the clock to
		// the nanosecond still tells two launches apart.
		return StopSignal{Dir: dir, Token: fmt.Sprintf("%d", time.Now().UnixNano())}
	}
	return StopSignal{Dir: dir, Token: time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])}
}

// Enabled reports whether s names a stop object at all.
func (s StopSignal) Enabled() bool { return s.Dir != "" && s.Token != "" }

// Path is the stop object of s's run.
func (s StopSignal) Path() string { return files.Join(s.Dir, stopPrefix+s.Token) }

// Validate refuses a signal whose object could not be named: a control
// folder no filesystem serves, or a token that is not a plain name.
func (s StopSignal) Validate() error {
	if !s.Enabled() {
		return nil
	}
	if err := files.Check(s.Dir); err != nil {
		return fmt.Errorf("control folder %s: %w", s.Dir, err)
	}
	if strings.ContainsAny(s.Token, "/\\*?[ ") || s.Token == "." || s.Token == ".." {
		return fmt.Errorf("stop token %q: want a plain name", s.Token)
	}
	return nil
}

// Prepare makes the control folder ready before the run starts: a local one
// is created (an object store needs no folder). It is where a control
// folder that cannot be written shows, before any work rather than at the
// stop.
func (s StopSignal) Prepare() error {
	if !s.Enabled() || !files.IsLocal(s.Dir) {
		return nil
	}
	return os.MkdirAll(s.Dir, 0o755)
}

// probePrefix starts the probe object's name, "probe-<token>": never a
// stop object's name, of this run or any other.
const probePrefix = "probe-"

// probeTimeout bounds the probe, so that a store that hangs fails the start
// rather than holding it.
const probeTimeout = 30 * time.Second

// ProbePath is the object Probe writes and removes: beside the stop object,
// named so that no reader of any run takes it for a stop request.
func (s StopSignal) ProbePath() string { return files.Join(s.Dir, probePrefix+s.Token) }

// Probe checks, before the run starts, that the stop object can be written:
// it prepares the control folder, writes a small probe object beside where
// the stop object will go, and removes it. Otherwise a control folder the
// launcher cannot write (a read-only gs:// raw log bucket, say) would show
// only at the stop, which would then degrade to a cancel after the stop
// timeout. A probe object that cannot be removed is only logged: the stop
// needs the write alone, and a leftover probe is never read (the control
// folder's name starts with '_', and no reader looks for "probe-").
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
	if err := files.WriteFile(ctx, path, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "write probe of run %s %s: the graceful stop writes here\n", s.Token, time.Now().UTC().Format(time.RFC3339))
		return err
	}); err != nil {
		return err
	}
	if err := files.Remove(ctx, path); err != nil {
		slog.Warn("removing the control folder's write probe; it stays, and nothing reads it", "path", path, "err", err)
	}
	return nil
}

// Request writes the stop object: every reader of the run stops within a
// poll interval of seeing it.
func (s StopSignal) Request(ctx context.Context) error {
	if !s.Enabled() {
		return errors.New("no control folder: the readers cannot be asked to stop")
	}
	if err := s.Prepare(); err != nil {
		return err
	}
	return files.WriteFile(ctx, s.Path(), func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "stop requested %s\n", time.Now().UTC().Format(time.RFC3339))
		return err
	})
}

// Requested reports whether the stop object of s's run exists.
func (s StopSignal) Requested(ctx context.Context) (bool, error) {
	if !s.Enabled() {
		return false, nil
	}
	_, err := files.Size(ctx, s.Path())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// Clear removes the stop object once the run has ended, and a local control
// folder left empty by it (other runs' objects stay). Nothing depends on it:
// a stop object left behind (a launcher that died) stops no other run.
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

// Watch returns a reader's view of the signal: it looks for the stop object
// at most once per every, and once it has seen it, never again.
func (s StopSignal) Watch(every time.Duration) *StopWatch {
	return &StopWatch{signal: s, every: every, now: time.Now}
}

// StopWatch is a reader's cached view of its run's StopSignal, held by a
// DoFn instance from Setup on. Losing it (a new instance, another worker)
// costs one more look, never a wrong answer: the object is the truth.
type StopWatch struct {
	signal StopSignal
	every  time.Duration
	now    func() time.Time

	mu      sync.Mutex
	next    time.Time // no look before this
	stopped bool
}

// Stopped reports whether the run's readers must stop. It is called for
// every line read, so it only looks at the filesystem when the last look is
// at least a poll interval old; a failed look counts as "not yet" and is
// retried then.
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
