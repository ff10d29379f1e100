package sources

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// tracker is the RTracker of one partition's restriction. A claim is the
// restriction as it stands after the claimed block (a record read, a file
// finished, the watermark state updated): the reader works on its own copy
// and claims each state it reaches, and the tracker holds the last state
// claimed, which is exactly where a checkpoint resumes.
//
// The restriction is never split for parallelism (a partition is one
// ordered sequence): TrySplit only honours fraction 0, the self-checkpoint,
// whose primary is the work claimed so far (closed) and whose residual is
// the rest, starting at the last claimed state.
type tracker struct {
	cur     restriction
	bounded bool
	claims  int64
	// stopped is set by a checkpoint: the rest belongs to the residual.
	stopped bool
	err     error
}

var _ sdf.BoundableRTracker = (*tracker)(nil)

// newTracker tracks rest; bounded says whether the partition's input is
// finite (a replay) or not (a follower).
func newTracker(rest restriction, bounded bool) *tracker {
	return &tracker{cur: rest.clone(), bounded: bounded}
}

// TryClaim accepts a restriction value: the state after the claimed block.
// It fails once a checkpoint took the rest, or after the restriction was
// closed; claiming a closed state succeeds and finishes the restriction.
func (t *tracker) TryClaim(pos any) bool {
	if t.stopped || t.cur.Closed || t.err != nil {
		return false
	}
	next, ok := pos.(restriction)
	if !ok {
		t.err = fmt.Errorf("source tracker: claim of %T, want a restriction", pos)
		return false
	}
	t.cur = next // Read is copied on write: no need to copy it per record
	t.claims++
	return true
}

// GetError returns the error that made a claim fail, if any.
func (t *tracker) GetError() error { return t.err }

// TrySplit checkpoints at fraction 0 and refuses any other split.
func (t *tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.err != nil {
		return nil, nil, t.err
	}
	if fraction < 0 || fraction > 1 {
		return nil, nil, fmt.Errorf("source tracker: split fraction %v outside [0, 1]", fraction)
	}
	if t.stopped || t.cur.Closed || fraction > 0 {
		return t.cur.clone(), nil, nil
	}
	t.stopped = true
	res := t.cur.clone()
	prim := t.cur.clone()
	prim.Closed = true
	return prim, res, nil
}

// GetProgress reports the claims made as done and one unit remaining until
// the restriction is done: the work left in a partition is unknown (a
// follower's never ends), and splitting it is refused anyway.
func (t *tracker) GetProgress() (done, remaining float64) {
	done = float64(t.claims)
	if !t.IsDone() {
		remaining = 1
	}
	return done, remaining
}

// IsDone reports whether there is no work left for this tracker: the
// restriction was closed, or a checkpoint took the rest.
func (t *tracker) IsDone() bool { return t.stopped || t.cur.Closed }

// GetRestriction returns the last claimed state (after a checkpoint: the
// primary's).
func (t *tracker) GetRestriction() any {
	r := t.cur.clone()
	if t.stopped {
		r.Closed = true
	}
	return r
}

// IsBounded reports whether the partition is read once (replay) or followed.
func (t *tracker) IsBounded() bool { return t.bounded }

func (t *tracker) String() string {
	return fmt.Sprintf("sources.tracker{%v claims=%d stopped=%v}", t.cur, t.claims, t.stopped)
}
