package pubsub

import "time"

// pending is what a reader key knew was waiting for it at the end of its
// last call, in records. The restriction carries it, so the size of every
// residual the runner gets back at a checkpoint (restriction.size) follows
// the key's backlog: the runner's signal to scale, or to rebalance keys,
// instead of a constant. It is an estimate and decides nothing in the
// reader itself.
type pending struct {
	// Archive: records in the archive after the restriction's position,
	// still to be re-emitted before the key pulls again. The objects are
	// listed, not opened: each counts as one pull batch, at most what it
	// holds.
	Archive int64
	// Subscription: messages waiting in the subscription for this key, by
	// Little's law (see subscriptionBacklog). 0 after a pull that found
	// nothing.
	Subscription int64
}

// size is the restriction's size for the runner: one unit of work for a
// live key (a subscription never ends, and a key with nothing waiting must
// still be scheduled) plus the records waiting for it; 0 once closed.
func (r restriction) size() float64 {
	if r.Closed {
		return 0
	}
	return 1 + float64(r.Pending.Archive) + float64(r.Pending.Subscription)
}

// subscriptionBacklog estimates the messages waiting in the subscription for
// a key that pulled pulled messages in elapsed and did not find the
// subscription empty: its pull rate times the mean time a message waited
// between its publish and its pull (waited over the timed messages that
// carried a publish time). That is Little's law, exact for the averages of
// a steady stream; after an outage, which Pub/Sub hands out in no
// particular order, it overestimates at first, and falls as the old
// messages run out. Pub/Sub's own backlog figure
// (num_undelivered_messages) is in Cloud Monitoring, not in the pull API.
func subscriptionBacklog(pulled int64, elapsed, waited time.Duration, timed int64) int64 {
	if pulled <= 0 || timed <= 0 || elapsed <= 0 || waited <= 0 {
		return 0
	}
	rate := float64(pulled) / elapsed.Seconds()
	meanWait := waited.Seconds() / float64(timed)
	return int64(rate * meanWait)
}

// archiveBacklog estimates the records in objects archive objects still to
// re-emit, each at most one pull batch.
func archiveBacklog(objects, pullBatch int) int64 {
	return int64(max(objects, 0)) * int64(max(pullBatch, 1))
}
