// Package pubsub reads a Pub/Sub subscription into the pipeline
// (--source=pubsub:projects/P/subscriptions/S) as a PCollection of
// model.Record. The archive is the source of truth: every pulled message is
// written to a durable archive object before it is acknowledged, records
// reach the pipeline only from the archive, and the restriction the runner
// checkpoints is a position in the archive. docs/pubsub.md has the design,
// the figures and the comparison with Dataflow's native pubsubio.Read.
//
// # Shape
//
// Impulse → one element per reader key (Options.Shards) → Reshuffle → a
// splittable DoFn with one restriction per key, never split. The keys are
// elements, not restrictions, because runners place an SDF's work by its
// element (Flink keys the SDF's input by it). A restriction's size is one
// plus the records waiting for the key (size.go). Each call re-emits the
// archive objects after the restriction's position, else pulls, for at most
// MaxPerCall records or about a second.
//
// The reader uses synchronous Pull, not Subscriber.Receive: a splittable
// DoFn must return every second or so and decide itself when a message is
// acknowledged, while Receive runs until its context ends and acknowledges
// from its own goroutines. Options.Pullers pull streams run per call.
//
// # Archive, then acknowledge, then emit
//
// Each pulled batch is written as one new object
// "<YYYY-MM-DDTHH>-<seq>-<token>.jsonl" in the archive partition "pubsub"
// ("pubsub-kk" for key k > 0), with a hidden id sidecar written first; then
// acknowledged (a failed acknowledgement is logged, the messages come again
// and dedup drops them); then stamped, emitted and claimed. While a batch is
// held its ack deadline is extended; an archive that cannot be written for
// --pubsub-archive-fail-after fails the job rather than stall it. Bundle
// finalization is not used: the Go SDK lacks it on Flink.
//
// A record's Position is "pubsub:<message_id>", so a redelivery's audit rows
// are idempotent; event_time comes from the payload only. After any retry,
// restore or restart a call re-emits the objects after its position, then
// pulls: what a lost attempt acknowledged is in the archive, what it did not
// comes again from Pub/Sub, and dedup counts both once. A job started afresh
// re-emits the whole archive (from ReplayFrom, or none with SkipReplay),
// which rebuilds dedup state and the watermark on prism.
//
// # Watermark
//
// The subscription is one partition per key: max valid event_time −
// --ooo-bound. Choose the bound from a high percentile of pull time − event
// time plus the ack deadline. A key that pulls nothing for --idle-timeout is
// idle and advances with processing time; a failed pull counts as activity,
// so a Pub/Sub outage does not close windows. Messages published more than
// BacklogAge before their pull hold the watermark (backlog.go).
//
// # Stopping
//
// Options.Stop is the folder source's graceful stop (sources.StopSignal): no
// further pulls, the restriction never finished. A runner's drain truncates
// the restriction; on Dataflow it also emits FINAL rows for open windows, so
// prefer cancel and restart.
package pubsub
