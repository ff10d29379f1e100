package pubsub

import (
	"slices"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// The backlog hold. Pub/Sub hands out a backlog (after an outage) in no
// order, so the watermark would jump to its end and judge its older events
// late although they only waited. A batch with a message published more
// than BacklogAge before its pull is a backlog batch; while such batches
// come the partition watermark holds (watermark.Partition.Backlog), and the
// first fresh batch releases it. The flag is decided at pull time and kept
// in the sidecar, so a re-emit gives the same verdicts.

// isBacklog reports whether a pulled batch comes from a backlog.
func isBacklog(msgs []*pb.ReceivedMessage, pulled time.Time, age time.Duration) bool {
	return age > 0 && slices.ContainsFunc(msgs, func(m *pb.ReceivedMessage) bool {
		pt := m.GetMessage().GetPublishTime()
		return pt != nil && pulled.Sub(pt.AsTime()) > age
	})
}
