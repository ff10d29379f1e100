package sdfread

import (
	"fmt"
)

// Checkpointable is a restriction a CheckpointTracker can hold: the folder
// source's per-partition restriction and the Pub/Sub reader's.
type Checkpointable[R any] interface {
	// IsClosed reports whether no work is left.
	IsClosed() bool
	// Closing returns a copy of the restriction with no work left.
	Closing() R
	// Clone returns a copy sharing no mutable state with the original.
	Clone() R
}

// CheckpointTracker is the RTracker of both sources. A claim is the
// restriction as it stands after the claimed block (a record read, a file
// finished, a pulled batch archived, the watermark state updated): the
// reader works on its own copy and claims each state it reaches, and the
// tracker holds the last state claimed, which is exactly where a checkpoint
// resumes.
//
// The restriction is never split for parallelism (a partition, or a
// subscription, is one ordered sequence with one watermark): TrySplit only
// honours fraction 0, the self-checkpoint, whose primary is the work claimed
// so far (closed) and whose residual is the rest, starting at the last
// claimed state.
type CheckpointTracker[R Checkpointable[R]] struct {
	name    string // for errors: "source", "pubsub"
	cur     R
	bounded bool
	claims  int64
	// stopped is set by a checkpoint: the rest belongs to the residual.
	stopped bool
	err     error
}

// NewCheckpointTracker tracks rest; bounded says whether the input is
// finite (a replay) or not (a follower, a subscription: a runner's drain
// then truncates the restriction rather than waiting for it to end).
func NewCheckpointTracker[R Checkpointable[R]](name string, rest R, bounded bool) *CheckpointTracker[R] {
	return &CheckpointTracker[R]{name: name, cur: rest.Clone(), bounded: bounded}
}

// TryClaim accepts a restriction value: the state after the claimed block.
// It fails once a checkpoint took the rest, or after the restriction was
// closed; claiming a closed state succeeds and finishes the restriction.
func (t *CheckpointTracker[R]) TryClaim(pos any) bool {
	if t.stopped || t.cur.IsClosed() || t.err != nil {
		return false
	}
	next, ok := pos.(R)
	if !ok {
		t.err = fmt.Errorf("%s tracker: claim of %T, want %T", t.name, pos, t.cur)
		return false
	}
	t.cur = next // restrictions are copied on write: no copy per claim
	t.claims++
	return true
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
// the restriction is done: the work left is unknown (a follower's or a
// subscription's never ends), and splitting it is refused anyway.
func (t *CheckpointTracker[R]) GetProgress() (done, remaining float64) {
	done = float64(t.claims)
	if !t.IsDone() {
		remaining = 1
	}
	return done, remaining
}

// IsDone reports whether there is no work left for this tracker: the
// restriction was closed, or a checkpoint took the rest.
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
