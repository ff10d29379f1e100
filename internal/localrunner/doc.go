// Package localrunner holds what exists only because of the local runner,
// prism (Beam v2.77.0), so the DoFns read as runner-agnostic Beam. Nothing
// here may carry correctness elsewhere: a process-wide value is at most a cache.
// The prism-only switches follow capability.IsPrism and nothing else.
//
// Each entry: the prism trap, where it is handled, what happens elsewhere.
//
//   - Runner-initiated splits replay processed elements (apache/beam#35771;
//     conservation broke by 5,465 of 1,000,000): UseSafeOptions adds
//     DisableSplitExperiment on prism only (options.go).
//   - Lost metric updates (prism jobservices/metrics.go): a bundle reporting an
//     unresolved short id can overwrite another's payload; the metric gate
//     renames such ids per bundle (metricgate.go). Off prism the hook is
//     disabled, as its alias map would grow for ever (TestPrismWorkaroundsOnlyOnPrism).
//   - prism starts its job service inside beam.Run, and the launcher needs the
//     address before: EnsureJobService starts it and sets --endpoint (jobservice.go).
//   - --async (--execute_async) makes beam.Run return at once; with prism in
//     this process the job dies with the command, having written nothing (or
//     prism panics): launch and reconcile refuse it unless --endpoint names a
//     job server (CheckAsync, async.go). Other runners keep --async.
//   - One output watermark per stage from the last bundle's residuals: the
//     folder source keeps a watermark.Board per source in a Shared (shared.go)
//     so a fast partition cannot pass a slow one; it also carries
//     --idle-advance=hold, which the launcher refuses off prism.
//   - Workers share the launcher's process (loopback) and Teardown is never
//     promised: the write verbs keep reference-counted sink handles, closed by
//     CloseShared after the job, and LastWrite tells a graceful stop when
//     output settled (sinks/sink/write.go, outside this package so that the
//     job graph links no runner). Elsewhere the sinks' revision rules carry
//     correctness.
//   - The SDK's universal runner stages an empty file,
//     os.TempDir()/beamloopbackworker-*, as a loopback job's worker binary and
//     never removes it (runnerlib.Execute): launch, reconcile and the tests'
//     runnertest.Submit and runnertest.Run remove their job's, named by the
//     job's pipeline, once the job ends (placeholder.go). A test job that
//     fails before it returns a result still leaves its own.
//   - No backpressure (issue #26): the read-ahead account (internal/flow) pauses
//     the source while no read fits under --read-ahead; enabled only with
//     in-process workers, since Flink and Dataflow have their own flow control.
//   - What waits between stages lives in this process's heap, whose live size
//     spikes when timers release held batches; GOGC=100 doubles every spike
//     into the heap's goal (issue #26). With prism in this process the GC
//     pacer (gcpace.go) holds the goal at 1.7 times the median live heap unless
//     GOGC or GOMEMLIMIT is set. Workers elsewhere keep Go's own pacing
//     under the dedup step's memory limit (transforms/dedup_cache.go).
package localrunner
