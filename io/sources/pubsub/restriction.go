package pubsub

import (
	"fmt"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/io/internal/sdfread"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	sdfread.RegisterRestrictionCoder(encodeRestriction, decodeRestriction)
}

// restriction is one reader key's whole state, and it is what the runner
// checkpoints: a position in the archive, not in the subscription. Records
// reach the pipeline only from the archive's objects, in name order, and
// the restriction says up to where they were emitted. Whatever was pulled,
// archived and acknowledged after that position (by this attempt or by one
// the runner threw away) is in objects after it, and the next call re-emits
// them before it pulls again; dedup absorbs what the runner had committed
// already. No bundle finalization is needed, which the Go SDK on Flink
// lacks.
type restriction struct {
	// Shard is the reader key: its objects live in PartitionOf(Shard).
	Shard int
	// Started: the first call has set the start position (the whole
	// archive, from ReplayFrom, or its end with SkipReplay).
	Started bool
	// Emitted is the archive position: every record of every object whose
	// name sorts <= Emitted has been emitted. Object, when set, is the next
	// object, being re-emitted: Offset and Line are its rawlog.Mark.
	Emitted string
	Object  string
	Offset  int64
	Line    int
	// Seq and Hour are the largest sequence number and hour in the names of
	// the shard's objects seen so far: the next object gets Seq+1 and an
	// hour no earlier than Hour, so it sorts after all of them.
	Seq  int64
	Hour string
	// State is the watermark state, the backlog hold included (see
	// backlog.go and watermark.State).
	watermark.State
	// Pending is what the key knew was waiting for it when it claimed
	// this state: the restriction's size (size.go).
	Pending pending

	// Closed marks a restriction with no work left: the primary of a
	// checkpoint, or a truncated one.
	Closed bool
}

func newRestriction(shard int, now int64) restriction {
	return restriction{Shard: shard, State: watermark.NewState(now)}
}

func (r restriction) String() string {
	return fmt.Sprintf("{shard=%d emitted=%q object=%q line=%d seq=%d %v pending=%d+%d closed=%v}",
		r.Shard, r.Emitted, r.Object, r.Line, r.Seq, r.State, r.Pending.Archive, r.Pending.Subscription, r.Closed)
}

// restrictionVersion 4: the pending records, the restriction's size (3: the
// backlog hold moved into the watermark state; 2: the archive position; 1
// held a replay phase).
const restrictionVersion = 4

func encodeRestriction(r restriction) []byte {
	return sdfread.EncodeRestriction(restrictionVersion, 128+len(r.Emitted)+len(r.Object), func(w *coders.Writer) {
		w.Varint(int64(r.Shard))
		w.Bool(r.Started)
		w.String(r.Emitted)
		w.String(r.Object)
		w.Varint(r.Offset)
		w.Varint(int64(r.Line))
		w.Varint(r.Seq)
		w.String(r.Hour)
		r.State.Encode(w)
		w.Varint(r.Pending.Archive)
		w.Varint(r.Pending.Subscription)
		w.Bool(r.Closed)
	})
}

func decodeRestriction(b []byte) (restriction, error) {
	return sdfread.DecodeRestriction(b, restrictionVersion, "pubsub restriction", func(rd *coders.Reader) restriction {
		return restriction{
			Shard: int(rd.Varint()), Started: rd.Bool(), Emitted: rd.String(), Object: rd.String(),
			Offset: rd.Varint(), Line: int(rd.Varint()), Seq: rd.Varint(), Hour: rd.String(),
			State: watermark.DecodeState(rd), Pending: pending{Archive: rd.Varint(), Subscription: rd.Varint()},
			Closed: rd.Bool(),
		}
	})
}

// Clone, Closing and IsClosed make restriction sdfread.Checkpointable (the
// reader is tracked by sdfread.CheckpointTracker, unbounded: a subscription
// never ends). The restriction holds no slices: a copy is a clone.
func (r restriction) Clone() restriction { return r }

func (r restriction) Closing() restriction {
	r.Closed = true
	return r
}

func (r restriction) IsClosed() bool { return r.Closed }
