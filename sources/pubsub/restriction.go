package pubsub

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources"
)

func init() {
	beam.RegisterCoder(reflect.TypeOf((*restriction)(nil)).Elem(), encodeRestriction, decodeRestriction)
}

// Replay phases of a restriction.
const (
	// replayPending: the archive is not listed yet. It is listed by the
	// first call, in the worker that holds the archive, after sealing the
	// file being written, so the replay reads complete files only.
	replayPending = iota
	// replayRunning: reading archive files up to ReplayUntil.
	replayRunning
	// replayDone: pulling from the subscription.
	replayDone
)

// restriction is the reader's whole state: where the replay of the archive
// stands and the partition's watermark-policy state. The subscription keeps
// the pull position itself (unacknowledged messages), so a checkpoint only
// needs these to resume with the same watermark.
type restriction struct {
	Replay int
	// ReplayUntil is the last archive file the replay reads (files written
	// after it are this run's own). ReplayAfter is the last file replayed
	// completely. ReplayFile is the file being read ("" between files),
	// Offset and Line its rawlog.Mark, IdsOffset and IdsLine the same in
	// its id sidecar.
	ReplayUntil, ReplayAfter, ReplayFile string
	Offset                               int64
	Line                                 int
	IdsOffset                            int64
	IdsLine                              int

	// PolicyState is the watermark-policy state, as in the folder source.
	sources.PolicyState

	// Closed marks a restriction with no work left: the primary of a
	// checkpoint, or a truncated one.
	Closed bool
}

func newRestriction(now int64, replay bool) restriction {
	r := restriction{Replay: replayDone, PolicyState: sources.NewPolicyState(now)}
	if replay {
		r.Replay = replayPending
	}
	return r
}

func (r restriction) String() string {
	return fmt.Sprintf("{replay=%d until=%q after=%q file=%q line=%d maxValid=%s idle=%v reported=%s closed=%v}",
		r.Replay, r.ReplayUntil, r.ReplayAfter, r.ReplayFile, r.Line, fmtMs(r.MaxValid), r.Idle, fmtMs(r.Reported), r.Closed)
}

func fmtMs(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}

const restrictionVersion = 1

func encodeRestriction(r restriction) []byte {
	w := coders.Writer{B: make([]byte, 0, 96+len(r.ReplayUntil)+len(r.ReplayAfter)+len(r.ReplayFile))}
	w.Uvarint(restrictionVersion)
	w.Uvarint(uint64(r.Replay))
	w.String(r.ReplayUntil)
	w.String(r.ReplayAfter)
	w.String(r.ReplayFile)
	w.Varint(r.Offset)
	w.Varint(int64(r.Line))
	w.Varint(r.IdsOffset)
	w.Varint(int64(r.IdsLine))
	r.PolicyState.Encode(&w)
	w.Bool(r.Closed)
	return w.B
}

func decodeRestriction(b []byte) (restriction, error) {
	rd := coders.Reader{B: b}
	if v := rd.Uvarint(); rd.Err == nil && v != restrictionVersion {
		return restriction{}, fmt.Errorf("decode pubsub restriction: unknown version %d", v)
	}
	var r restriction
	r.Replay = int(rd.Uvarint())
	r.ReplayUntil = rd.String()
	r.ReplayAfter = rd.String()
	r.ReplayFile = rd.String()
	r.Offset = rd.Varint()
	r.Line = int(rd.Varint())
	r.IdsOffset = rd.Varint()
	r.IdsLine = int(rd.Varint())
	r.PolicyState = sources.DecodePolicyState(&rd)
	r.Closed = rd.Bool()
	if rd.Err != nil {
		return restriction{}, fmt.Errorf("decode pubsub restriction: %w", rd.Err)
	}
	if len(rd.B) != 0 {
		return restriction{}, fmt.Errorf("decode pubsub restriction: %d trailing bytes", len(rd.B))
	}
	if r.Replay > replayDone {
		return restriction{}, fmt.Errorf("decode pubsub restriction: unknown replay phase %d", r.Replay)
	}
	return r, nil
}

// tracker is the RTracker of the one restriction. A claim is the restriction
// as it stands after the claimed block (a record replayed, a pulled batch
// archived and stamped, the watermark state updated); the tracker holds the
// last state claimed, which is where a checkpoint resumes.
//
// The restriction is never split for parallelism: Pub/Sub has no partitions
// to split by, and one reader keeps one arrival order and one watermark.
// TrySplit honours fraction 0 only, the self-checkpoint: the primary is the
// work claimed so far (closed), the residual the rest.
type tracker struct {
	cur     restriction
	claims  int64
	stopped bool
	err     error
}

var _ sdf.BoundableRTracker = (*tracker)(nil)

// TryClaim accepts the state after the claimed block. It fails once a
// checkpoint took the rest, or after the restriction was closed.
func (t *tracker) TryClaim(pos any) bool {
	if t.stopped || t.cur.Closed || t.err != nil {
		return false
	}
	next, ok := pos.(restriction)
	if !ok {
		t.err = fmt.Errorf("pubsub tracker: claim of %T, want a restriction", pos)
		return false
	}
	t.cur = next
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
		return nil, nil, fmt.Errorf("pubsub tracker: split fraction %v outside [0, 1]", fraction)
	}
	if t.stopped || t.cur.Closed || fraction > 0 {
		return t.cur, nil, nil
	}
	t.stopped = true
	prim := t.cur
	prim.Closed = true
	return prim, t.cur, nil
}

// GetProgress reports the claims made and one unit remaining: a
// subscription never ends.
func (t *tracker) GetProgress() (done, remaining float64) {
	done = float64(t.claims)
	if !t.IsDone() {
		remaining = 1
	}
	return done, remaining
}

// IsDone reports whether a checkpoint took the rest or the restriction was
// closed.
func (t *tracker) IsDone() bool { return t.stopped || t.cur.Closed }

// GetRestriction returns the last claimed state (after a checkpoint: the
// primary's).
func (t *tracker) GetRestriction() any {
	r := t.cur
	if t.stopped {
		r.Closed = true
	}
	return r
}

// IsBounded is false: a subscription is unbounded. A runner's drain
// therefore truncates the restriction (the SDK's default for unbounded
// ones) rather than waiting for it to end.
func (t *tracker) IsBounded() bool { return false }
