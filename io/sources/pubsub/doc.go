// Package pubsub reads a Pub/Sub subscription into the pipeline
// (--source=pubsub:projects/P/subscriptions/S) as a PCollection of
// model.Record. The archive is the source of truth: every pulled message is
// written to a durable archive object before it is acknowledged, records
// reach the pipeline only from the archive, and the splittable DoFn's
// restriction (what the runner checkpoints) is a position in the archive.
// See docs/pubsub.md for the design, the figures and the comparison with
// Dataflow's native Pub/Sub read.
//
// # Shape
//
// Impulse → one element per reader key (subscription, shard;
// Options.Shards, default 1) → Reshuffle → a splittable DoFn with one
// restriction per element, never split (a key is one arrival order with one
// watermark). The keys are elements, not restrictions of one element,
// because runners place an SDF's work by its element: Flink keys the SDF's
// input by it, and the Reshuffle lets a runner that fused the expansion
// with the Impulse spread the keys over its workers. The restriction's
// size is one unit plus the records the key knew were waiting for it at
// its last call, in its archive and in the subscription (size.go): every
// residual of a checkpoint carries it back to the runner, which sees the
// backlog instead of a constant. Each call first re-emits the
// archive objects after the restriction's position, if any, else pulls, for
// at most MaxPerCall records or about a second, then returns
// sdf.ResumeProcessingIn so that the runner sees the watermark and can
// checkpoint.
//
// The reader uses synchronous Pull, not the client's streaming
// Subscriber.Receive: a splittable DoFn must return every second or so and
// must decide itself when a message is acknowledged, while Receive runs
// until its context ends and acknowledges from its own goroutines. Within a
// call, Options.Pullers pull streams (default 8) each pull, archive and
// acknowledge on their own; the call's goroutine emits their batches in
// sequence order.
//
// # Archive, then acknowledge, then emit from the archive position
//
// For each pulled batch:
//
//  1. The batch gets the reader key's next sequence number and is written
//     as one new object "<YYYY-MM-DDTHH>-<seq>-<token>.jsonl" (pull hour,
//     12-digit sequence number, the attempt's random token) in the archive
//     partition "pubsub" (reader key k > 0: "pubsub-kk"), on any filesystem
//     Beam's io/filesystem serves: local disk on prism (fsynced), GCS in
//     production (committed at Close). Objects are never appended to. A
//     hidden sidecar "."+name+".ids" written first holds each line's message
//     id, publish time and backlog flag. Lexical order of the names is the
//     order the reader emits in.
//  2. The batch is acknowledged. Only now: a message acknowledged is a
//     message in the archive. A failed acknowledgement is logged and
//     counted; Pub/Sub delivers those messages again, and dedup drops them.
//  3. The batch's records are stamped and emitted, and the restriction
//     claims the object as emitted.
//
// While a batch is held (pulled, not yet archived), a timer extends its ack
// deadline (ModifyAckDeadline to AckExtension every AckExtendEvery), and at
// most MaxHeld messages are held per reader key. If the archive write
// fails, the batch stays held and the write is retried with backoff
// (revenue/pubsub_archive_retries); after ArchiveFailAfter
// (--pubsub-archive-fail-after) the call returns an error naming the
// archive and the limit, and the job fails (the launcher exits 1) rather
// than stall. Bundle finalization is not used: the Go SDK lacks it on Flink.
//
// A line is the payload byte for byte, unless the payload holds CR or LF,
// which a line-oriented log cannot; each becomes a TAB. That keeps every
// verdict of SPEC §3 (outside JSON strings all three are insignificant
// whitespace; inside a string all three are raw control characters, which
// are malformed_json either way), and the stream itself parses the archived
// form, so the stream and a replay see the same bytes and write the same
// audit payloads. An empty or whitespace-only payload is acknowledged and
// skipped, not archived and not read (a blank line). A payload longer than
// --max-line is archived whole and read as oversized, as rawlog reads it.
//
// # Records
//
// Record{Partition: "pubsub", Position: "pubsub:<message_id>", Line,
// Oversized, ReadAt (processing time of the pull), WatermarkBefore}, with
// element timestamp max(WatermarkBefore, mtime.MinTimestamp), as the folder
// source does. event_time comes from the payload only; the message's
// publish time is the arrival clock of Pub/Sub and decides nothing. A
// redelivered message (same message id) gets the same Position, so its audit
// rows are idempotent, and dedup by event_id keeps the totals right.
//
// # Restart, retry, restore
//
// The restriction holds Emitted, the last archive object whose records were
// all emitted (plus the line reached inside the next one). After any retry,
// restore or restart, the call lists the reader key's objects after that
// position and re-emits them, then pulls. Whatever a lost attempt pulled,
// archived and acknowledged is there; whatever it pulled and did not
// acknowledge comes again from Pub/Sub. The runner may already hold some
// re-emitted records (it committed them before restoring an older
// checkpoint): dedup by event_id counts them once. A process-wide cache
// (the last object this process emitted itself) skips the listing in the
// steady state; losing it costs one List call.
//
// A job started afresh (no checkpoint) begins before the whole archive,
// before ReplayFrom, or after its end with SkipReplay: on prism, where
// nothing survives a restart, re-emitting the archive rebuilds the dedup
// state and the watermark. Re-emitted records get the same Position
// ("pubsub:<id>" from the sidecar) and, through the same Stamper and the
// stored backlog flags, the same WatermarkBefore, hence the same too-late
// verdicts, as the first time.
//
// A torn object (local disk, crash mid-write) is read up to its last
// complete line: it was never acknowledged. reconcile reads the same
// folder with the same rules.
//
// # Watermark: the out-of-order bound and idleness for Pub/Sub
//
// Pub/Sub promises no order, so the whole subscription is one partition and
// its watermark is max valid event_time − --ooo-bound. Choose the bound
// from what delays an event between its event_time and its pull, minus the
// offline uploads that are meant to be late data anyway: the client's
// batching and retry delay, the publisher's queue, and Pub/Sub's own
// delivery spread, which grows with the subscription's backlog (oldest
// unacked message age) and with redeliveries after nacks or expired
// deadlines. In practice: a high percentile (p99.9) of
// pull_time − event_time over a normal day, measured from the archive and
// the ReadAt of the records, plus the ack deadline (a message whose delivery
// failed comes back after it). Too small a bound turns ordinary jitter into
// LATE revisions and, after the allowed lateness, into too-late audit rows;
// too large a bound only delays ON_TIME. The default 10 m covers seconds of
// jitter and minutes of redelivery with room to spare.
//
// Idleness: a subscription that delivers nothing for --idle-timeout
// (processing time) is idle, and its watermark then advances with
// processing time (now − bound), like the folder source's idle partitions
// and Beam's KafkaIO, so that quiet hours still get their ON_TIME and FINAL
// rows. When messages flow again, the ones older than the watermark are late
// (a LATE revision) or too late (audit), never lost. Idleness means "the
// producers sent nothing", and also "this job could not pull" (an outage of
// Pub/Sub or of the network): set --idle-timeout above the longest outage
// you want to ride out without closing windows. A pull that fails (as
// opposed to one that finds nothing) counts as activity: an outage of
// Pub/Sub itself does not make the source idle. The transition is logged and
// counted in revenue/idle_transitions_pubsub; revenue/watermark_lag_ms_pubsub
// is processing time minus the reported watermark.
//
// Backlog: after an outage the subscription holds a backlog, which Pub/Sub
// hands out in no particular order. The publish times of what is pulled
// show it (a message published more than BacklogAge, default 1m, before
// its pull), and while backlog batches come the partition watermark, both
// WatermarkBefore and the reported one, is held where it was; the first
// fresh batch releases it. See backlog.go.
//
// # Stopping
//
// Options.Stop is the folder source's graceful stop (sources.StopSignal, an
// object every reader looks for once per poll): no further pulls, the
// restriction is never finished (that would move the watermark to the end of
// time and write FINAL rows for windows still correctable), then the
// launcher cancels the job. A runner's drain truncates the unbounded
// restriction (the SDK's default): the messages not yet pulled stay in the
// subscription, but Dataflow's drain also advances the watermark to the end
// of time, which emits FINAL rows for open windows; prefer cancel + restart
// (the replay recovers everything) or an in-place update.
//
// # The alternative: Dataflow's native Pub/Sub source
//
// See docs/pubsub.md: on Dataflow, pkg/beam/io/pubsubio.Read gives event
// time from an attribute, acknowledgement on the first stage's durable
// commit and a backlog-aware watermark, but no raw-log archive and no
// per-partition watermark of our own.
package pubsub
