package pubsub

import (
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// The backlog hold. A subscription that was not read for a while (the job
// was down, or could not pull) holds a backlog, and Pub/Sub hands a backlog
// out in no particular order: the newest events can come first. The
// partition watermark (max valid event time − bound) would then jump to the
// end of the backlog, and its older events would be judged late, or too
// late once the allowed lateness is shorter than the outage, although
// nothing about them is late: they waited in the subscription.
//
// The publish times of what is pulled tell the reader that it is reading a
// backlog: a message published more than BacklogAge before its pull waited
// in the subscription. A batch with such a message is a backlog batch, and
// while backlog batches come, the partition watermark (the WatermarkBefore
// that rule (a) of the too-late gate judges, and the watermark reported to
// the runner) stays where it was when the first of them arrived. The first
// batch without one ends the hold: the watermark then catches up with the
// largest event time seen in one step, and the windows the backlog filled
// get their ON_TIME rows complete instead of a stream of LATE revisions.
//
// The decision is made once per batch, at pull time, and stored in the
// archive's sidecar (sideEntry.Backlog), so that a re-emit from the archive
// gives every record the same WatermarkBefore, hence the same verdicts, as
// the stream did. The hold itself is the watermark's (watermark.Partition.Backlog):
// the reader only says, before stamping each record, whether it is one of a
// backlog batch.

// isBacklog reports whether a pulled batch comes from a backlog.
func isBacklog(msgs []*pb.ReceivedMessage, pulled time.Time, age time.Duration) bool {
	if age <= 0 {
		return false
	}
	for _, m := range msgs {
		if pt := m.GetMessage().GetPublishTime(); pt != nil && pulled.Sub(pt.AsTime()) > age {
			return true
		}
	}
	return false
}
