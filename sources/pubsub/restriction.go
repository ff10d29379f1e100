package pubsub

import (
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	coders.Register(encodeRestriction, decodeRestriction)
}

// restriction is one reader key's whole state: a position in the archive,
// not in the subscription. Whatever any attempt archived after it is
// re-emitted by the next call before it pulls (see the package doc).
type restriction struct {
	Shard   int  // the reader key: its objects are in PartitionOf(Shard)
	Started bool // the first call has set the start position (reader.begin)
	// Emitted is the archive position: every object whose name sorts <=
	// Emitted has been emitted. Object, when set, is the next one, being
	// re-emitted, and Offset and Line are its rawlog.Mark.
	Emitted string
	Object  string
	Offset  int64
	Line    int
	// Seq and Hour are the largest in the shard's object names seen so far,
	// so the next object sorts after all of them.
	Seq             int64
	Hour            string
	watermark.State         // the backlog hold included
	Pending         pending // what waits for the key: the size (restriction.size)
	Closed          bool    // no work left (a checkpoint's primary)
}

func newRestriction(shard int, now int64) restriction {
	return restriction{Shard: shard, State: watermark.NewState(now)}
}

func (r restriction) String() string {
	return fmt.Sprintf("{shard=%d emitted=%q object=%q line=%d seq=%d %v pending=%d+%d closed=%v}",
		r.Shard, r.Emitted, r.Object, r.Line, r.Seq, r.State, r.Pending.Archive, r.Pending.Subscription, r.Closed)
}

// restrictionVersion 4: the pending records (the restriction's size).
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

// Clone, Closing and IsClosed make restriction sdfread.Checkpointable. It
// holds no slices: a copy is a clone.
func (r restriction) Clone() restriction { return r }

func (r restriction) Closing() restriction {
	r.Closed = true
	return r
}

func (r restriction) IsClosed() bool { return r.Closed }

// pending estimates the records waiting for a reader key at the end of its
// last call, so every residual's size (restriction.size) follows the
// backlog: the runner's signal to scale or rebalance. It decides nothing.
type pending struct {
	Archive      int64 // records still to re-emit, one pull batch per object listed
	Subscription int64 // messages waiting in the subscription (Little's law)
}

// size is one unit of work for a live key plus the records waiting for it;
// 0 once closed.
func (r restriction) size() float64 {
	if r.Closed {
		return 0
	}
	return 1 + float64(r.Pending.Archive) + float64(r.Pending.Subscription)
}

// subscriptionBacklog estimates the messages waiting for a key that pulled
// pulled messages in elapsed: its pull rate times the mean publish-to-pull
// wait (waited over timed messages), Little's law. Pub/Sub's own figure is
// in Cloud Monitoring, not in the pull API.
func subscriptionBacklog(pulled int64, elapsed, waited time.Duration, timed int64) int64 {
	if pulled <= 0 || timed <= 0 || elapsed <= 0 || waited <= 0 {
		return 0
	}
	rate := float64(pulled) / elapsed.Seconds()
	meanWait := waited.Seconds() / float64(timed)
	return int64(rate * meanWait)
}

// archiveBacklog estimates the records in objects still to re-emit.
func archiveBacklog(objects, pullBatch int) int64 {
	return int64(max(objects, 0)) * int64(max(pullBatch, 1))
}
