// Package pubsub reads a Pub/Sub subscription into the pipeline
// (--source=pubsub:projects/P/subscriptions/S) as a PCollection of
// model.Record. docs/pubsub.md has the design and the comparison with
// Dataflow's native pubsubio.Read.
//
// The archive is the source of truth: each pulled batch is written as one
// archive object (id sidecar first), then acknowledged, then stamped,
// emitted and claimed; the restriction is a position in the archive. After a
// retry, restore or restart a call re-emits the objects after its position,
// then pulls, and dedup counts both once. Positions are "pubsub:<message id>".
//
// Impulse → one element per reader key (Options.Shards) → Reshuffle → a
// splittable DoFn with one restriction per key, never split (runners place
// an SDF's work by its element). The reader uses synchronous Pull, not
// Subscriber.Receive: a call must return every second or so and decide when
// a message is acknowledged. Bundle finalization is not used: the Go SDK
// lacks it on Flink.
//
// Each key is one partition of the watermark (--ooo-bound, --idle-timeout);
// a failed pull counts as activity, so an outage does not close windows, and
// a backlog holds the watermark (isBacklog). Options.Stop is the folder
// source's graceful stop (sources.StopSignal).
package pubsub
