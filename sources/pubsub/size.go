package pubsub

import "time"

// pending estimates the records waiting for a reader key at the end of its
// last call, so every residual's size (restriction.size) follows the
// backlog: the runner's signal to scale or rebalance. It decides nothing.
type pending struct {
	// Archive: records still to re-emit, one pull batch per object listed.
	Archive int64
	// Subscription: messages waiting in the subscription (Little's law).
	Subscription int64
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
