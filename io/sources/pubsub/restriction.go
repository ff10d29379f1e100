package pubsub

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/io/sources"
	"github.com/revenue-stream/hourly/model"
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

// Clone, Closing and IsClosed make restriction sources.Checkpointable (the
// reader is tracked by sources.CheckpointTracker, unbounded: a subscription
// never ends). The restriction holds no slices: a copy is a clone.
func (r restriction) Clone() restriction { return r }

func (r restriction) Closing() restriction {
	r.Closed = true
	return r
}

func (r restriction) IsClosed() bool { return r.Closed }
