// Package localrunner holds what exists only because of the local runner,
// prism (Beam v2.77.0), so that the DoFns read as runner-agnostic Beam and a
// reader knows exactly what changes on Flink or Dataflow.
//
// Each entry is a prism trap, where it is handled, and what it means on a
// distributed runner. None of them may carry correctness there: a
// process-wide variable here is at most a cache whose loss costs time.
//
// "Is this prism?" has one answer, capability.IsPrism: --runner names
// prism, in this process or as a job server at --endpoint. The switches
// below that are prism-only (the split experiment, the metric gate,
// --idle-advance=hold) follow it and nothing else; --runner=universal is an
// unknown job server and gets none of them.
//
//   - Runner-initiated splits replay processed elements
//     (apache/beam#35771): prism splits any bundle that makes no visible
//     progress for a while, stateful ones with timers included, and the SDK
//     then processes some elements twice; conservation broke by 5,465 of
//     1,000,000 records. UseSafeOptions adds DisableSplitExperiment on
//     prism only (options.go); elsewhere the runner decides its splits.
//
//   - Lost metric updates (prism jobservices/metrics.go,
//     unprocessedPayloads): a bundle reporting a short id prism has not
//     resolved yet can overwrite another bundle's payload for the same id.
//     The metric gate, worker request/response hooks UseSafeOptions enables
//     on prism only, renames such an id in each bundle response to an alias
//     of its own and describes the alias when asked (metricgate.go), so the
//     launcher's figures come from the runner in loopback too. Off prism
//     the hook is disabled before submission and travels with no job: on a
//     runner that never asks for metric metadata its alias map would grow
//     by an entry per metric and bundle for ever (TestPrismWorkaroundsOnlyOnPrism).
//     Elsewhere the figures are the runner's own, live where it reports
//     them (not Flink's job server: docs/restart.md).
//
//   - The job service's address (job-service start): prism's runner starts
//     its job service inside beam.Run, and the launcher needs the address
//     before (progress, stop, prism's UI). EnsureJobService starts it first
//     and sets --endpoint (jobservice.go); with --endpoint set (Flink's job
//     service) or another runner it does nothing.
//
//   - One output watermark per stage from the last bundle's residuals only
//     (prism's stage watermark estimate): a bundle holding only a fast
//     partition would move the stage past a slow one. The folder source
//     keeps a watermark.Board per source in a Shared (shared.go), a
//     process-wide value per key, and each partition's estimator reports
//     min(own, board) (io/sources/read.go). On Flink/Dataflow it only lowers
//     an estimate to the minimum the runner computes anyway; entries not
//     refreshed (partitions on other workers) stop counting. The board also
//     carries --idle-advance=hold (an idle partition follows the active
//     ones it sees): a worker holding only idle partitions would see none
//     and hold the whole pipeline, so the launcher refuses hold off prism
//     (one line, exit 2); elsewhere idle partitions follow processing time.
//
//   - Workers share the launcher's process (loopback): the SDK harness runs
//     every instance of every DoFn in one process and keeps them until it
//     ends, never promising Teardown. The sinks keep one reference-counted
//     handle per output (Handles), because the jsonl and console sinks hold
//     their revision guard in it, and the launcher closes what is left once
//     the job is over (Handles.CloseAll) before it reads the sink back. A
//     graceful stop waits for the output to settle by when this process
//     last wrote (LastWrite). On Flink or Dataflow each worker process has
//     its own handles (the sinks' own revision rules carry correctness) and
//     LastWrite sees nothing: the launcher reads the runner's sink counters
//     instead (handles.go).
//
//   - No backpressure (issue #26): prism lets a source read as fast as it
//     can, and what it read waits, encoded, in prism's per-key queue in
//     front of the dedup step; a replay's peak memory grew with the length
//     of the log. ReadAhead is a job's account of that queue in this
//     process (internal/flow): the folder source counts the valid records it
//     reads, the too-late gate and the dedup step what they take in, and
//     the source pauses while no call fits under --read-ahead. Flow control
//     only: a record's verdict never depends on when it was read. Records
//     that prism holds behind a window-end timer until the watermark moves
//     cannot be taken in: when the dedup step has taken nothing for
//     Blocked, the partitions holding the watermark read on past the budget
//     until it does. Flink (credit-based network buffers) and
//     Dataflow have their own flow control; the launcher enables the
//     bound only with in-process workers.
//
// The dedup step's shard cache (transforms/dedup_state.go) is not listed: it
// is a per-worker cache valid on any runner, checked against a token in
// state, whose loss costs a reload.
package localrunner
