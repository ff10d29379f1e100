package sdfread

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/revenue-stream/hourly/coders"
)

// Checkpointable is a restriction a CheckpointTracker can hold.
type Checkpointable[R any] interface {
	IsClosed() bool // no work is left
	Closing() R     // a copy with no work left
	Clone() R       // a copy sharing no mutable state
}

// CheckpointTracker is the RTracker of both sources. A claim is the whole
// restriction as it stands after the claimed block, so the tracker holds
// exactly where a checkpoint resumes. The restriction is one ordered
// sequence with one watermark: TrySplit honours only fraction 0, the
// self-checkpoint (primary: the claimed work, closed; residual: the rest).
type CheckpointTracker[R Checkpointable[R]] struct {
	name    string // for errors: "source", "pubsub"
	cur     R
	bounded bool
	claims  int64
	stopped bool // a checkpoint took the rest
	err     error
}

// NewCheckpointTracker tracks rest; bounded: a replay (an unbounded one is
// truncated by a drain).
func NewCheckpointTracker[R Checkpointable[R]](name string, rest R, bounded bool) *CheckpointTracker[R] {
	return &CheckpointTracker[R]{name: name, cur: rest.Clone(), bounded: bounded}
}

// TryClaim accepts the state after the claimed block. It fails once a
// checkpoint took the rest or the restriction was closed.
func (t *CheckpointTracker[R]) TryClaim(pos any) bool {
	if !t.open() {
		return false
	}
	next, ok := pos.(R)
	if !ok {
		t.err = fmt.Errorf("%s tracker: claim of %T, want %T", t.name, pos, t.cur)
		return false
	}
	return t.claim(next)
}

func (t *CheckpointTracker[R]) open() bool { return !t.stopped && !t.cur.IsClosed() && t.err == nil }

func (t *CheckpointTracker[R]) claim(next R) bool {
	if !t.open() {
		return false
	}
	t.cur = next // restrictions are copied on write: no copy per claim
	t.claims++
	return true
}

// Claim is rt.TryClaim(next) without boxing next into an interface: the
// readers claim once a record, and a boxed restriction is an allocation each.
func Claim[R Checkpointable[R]](rt *sdf.LockRTracker, next R) bool {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	if t, ok := rt.Rt.(*CheckpointTracker[R]); ok {
		return t.claim(next)
	}
	return rt.Rt.TryClaim(next)
}

// GetError returns the error that made a claim fail, if any.
func (t *CheckpointTracker[R]) GetError() error { return t.err }

// TrySplit checkpoints at fraction 0 and refuses any other split.
func (t *CheckpointTracker[R]) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.err != nil {
		return nil, nil, t.err
	}
	if fraction < 0 || fraction > 1 {
		return nil, nil, fmt.Errorf("%s tracker: split fraction %v outside [0, 1]", t.name, fraction)
	}
	if t.stopped || t.cur.IsClosed() || fraction > 0 {
		return t.cur.Clone(), nil, nil
	}
	t.stopped = true
	return t.cur.Closing(), t.cur.Clone(), nil
}

// GetProgress reports the claims made as done and one unit remaining until
// the restriction is done: the work left is unknown.
func (t *CheckpointTracker[R]) GetProgress() (done, remaining float64) {
	done = float64(t.claims)
	if !t.IsDone() {
		remaining = 1
	}
	return done, remaining
}

// IsDone reports whether the restriction was closed or checkpointed.
func (t *CheckpointTracker[R]) IsDone() bool { return t.stopped || t.cur.IsClosed() }

// GetRestriction returns the last claimed state (after a checkpoint: the
// primary's).
func (t *CheckpointTracker[R]) GetRestriction() any {
	if t.stopped {
		return t.cur.Closing()
	}
	return t.cur.Clone()
}

// IsBounded reports whether the input is read once or followed.
func (t *CheckpointTracker[R]) IsBounded() bool { return t.bounded }

// EncodeRestriction encodes a restriction as its version, then what body
// writes; size is the expected length.
func EncodeRestriction(version uint64, size int, body func(*coders.Writer)) []byte {
	w := coders.Writer{B: make([]byte, 0, size)}
	w.Uvarint(version)
	body(&w)
	return w.B
}

// DecodeRestriction reads what EncodeRestriction wrote, refusing another
// version, a truncated value and trailing bytes; what names the
// restriction in errors.
func DecodeRestriction[R any](b []byte, version uint64, what string, body func(*coders.Reader) R) (R, error) {
	rd := coders.Reader{B: b}
	if v := rd.Uvarint(); rd.Err == nil && v != version {
		var zero R
		return zero, fmt.Errorf("decode %s: unknown version %d", what, v)
	}
	return coders.Done(body(&rd), &rd, what)
}
