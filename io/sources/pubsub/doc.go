// Package pubsub reads a Pub/Sub subscription into the pipeline
// (--source=pubsub:projects/P/subscriptions/S) as a PCollection of
// model.Record, with the project's recovery story built in: a message is
// acknowledged only once it can no longer be lost, that is once its payload
// is durably in a local raw-log archive that a restart, and
// `cmd/reconcile --source=<archive>`, replay.
//
// # Shape
//
// Impulse → the subscription name → a splittable DoFn with one restriction
// that is never split (Pub/Sub has no partitions: one reader, one arrival
// order, one watermark). Each call replays the archive if that is pending,
// else pulls, for at most MaxPerCall records or about 500 ms, then returns
// sdf.ResumeProcessingIn so that the runner sees the watermark and can
// checkpoint. The restriction holds the replay position and the watermark
// state; the subscription itself holds the pull position.
//
// The reader uses synchronous Pull, not the client's streaming
// Subscriber.Receive: a splittable DoFn must return every few hundred
// milliseconds and must decide itself when a message is acknowledged, while
// Receive runs until its context ends, acknowledges from its own goroutines
// and extends the leases of the messages it handed out. Each Pull's batch
// is carried through the whole sequence below before the call moves on.
// One reader with pulls of up to 1000 messages keeps up with the 20,000
// events/s peak of SPEC §1 only with fast disks (every batch is fsynced);
// beyond that, run several subscriptions (one archive folder each).
//
// # Archive, then acknowledge, then emit
//
// For each pulled batch, in the order Pub/Sub delivered it:
//
//  1. Each payload is appended to the archive: the folder ArchiveDir
//     (default ./pubsub-log/<subscription id>), whose one partition
//     subfolder "pubsub" holds files "<YYYY-MM-DDTHH>-<seq>.jsonl", named by
//     UTC hour of arrival and a growing sequence number so that lexical order
//     is arrival order. A new file starts every hour, every MaxFileLines
//     lines, after a write error and in every run. The batch is written and
//     fsynced (with the folder, for a new file) before anything else
//     happens. A hidden sidecar "."+file+".ids" holds each line's message id,
//     line for line; raw-log readers ignore it (rawlog.Ignored).
//  2. The records are stamped (rawlog.Stamper: the partition watermark
//     before each, validation, watermark advance) and the new watermark
//     state is claimed.
//  3. The batch is acknowledged. Only now: a message acknowledged is a
//     message in the archive. (Bundle finalization alone is not enough: prism
//     finalizes a bundle as soon as it has stored the bundle's output in
//     memory, which a crash loses.) A failed acknowledgement is logged and
//     counted; Pub/Sub delivers those messages again.
//  4. The records are emitted.
//
// If the archive append fails, nothing of the batch is acknowledged or
// emitted: the batch is handed back (ack deadline 0), the error logged and
// counted (revenue/pubsub_archive_errors), and the reader retries after a
// pause. The job does not fail: the messages wait in the subscription.
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
// # Restart and replay
//
// Unless Options.SkipReplay, the reader first replays the archive (from the
// arrival hour ReplayFrom, default all of it): every complete line of every
// file that exists when the job starts (it seals the file this process may
// still be writing first), through the same Stamper, with Position
// "pubsub:<id>" from the sidecar (or "pubsub/<file>:<line>" for a line the
// sidecar lacks: a crash between the two writes, never acknowledged). Then it
// pulls. The acknowledged messages that a killed run emitted but the runner
// never committed are in the archive, so the restart counts them; the
// messages it pulled but never acknowledged come again from Pub/Sub, and
// when they were archived too, dedup drops the second copy. Either way each
// event is counted once, and the sink's revision rules keep rows from going
// backwards while the restart catches up. Replaying the stamper over the
// archive in arrival order also gives every old record the same
// WatermarkBefore, hence the same too-late verdicts, as the first run.
//
// A torn last line (a crash mid-write) is never read: it was never
// acknowledged. reconcile reads the same folder with the same rules.
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
// you want to ride out without closing windows. The transition is logged and
// counted in revenue/idle_transitions_pubsub; revenue/watermark_lag_ms_pubsub
// is processing time minus the reported watermark.
//
// # Stopping
//
// RequestStop is the folder source's graceful stop: no further pulls, the
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
// On Dataflow, the Pub/Sub source built into the service (what Go's
// pkg/beam/io/pubsubio.Read asks for; it runs on Dataflow only) is faster
// and scales across workers, and Dataflow acknowledges a message only once
// its first stage has durably committed it, so it needs no archive for
// recovery. Its trade-off
// for this job: the element timestamp is the publish time, or a message
// attribute named by timestamp_attribute, never a field of the payload; its
// watermark is Dataflow's estimate over the subscription's backlog, not our
// per-partition bound and idle rule (so rule (a) of the too-late gate and
// WatermarkBefore are not available); and there is no raw-log archive for
// reconcile unless a second subscription feeds one. It fits when producers
// set an event-time attribute and the raw log is archived elsewhere.
package pubsub
