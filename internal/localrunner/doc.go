// Package localrunner holds what exists only because of the local runner,
// prism (Beam v2.78.0; each trap below was found on v2.77.0 and is still
// there), so the DoFns read as runner-agnostic Beam. Nothing
// here carries correctness elsewhere: a process-wide value is at most a cache.
// The prism-only switches follow capability.IsPrism and nothing else.
//
// Each prism trap, where it is handled, and what happens elsewhere:
//
//   - Runner-initiated splits replay processed elements (apache/beam#35771;
//     5,465 of 1,000,000 counted twice; on v2.78.0, 43 in one replay of
//     three): UseSafeOptions adds
//     DisableSplitExperiment on prism only (options.go).
//   - Lost metric updates (prism jobservices/metrics.go): a bundle reporting an
//     unresolved short id can overwrite another's payload; the metric gate
//     renames such ids per bundle (metricgate.go). Off prism the hook is
//     disabled, as its alias map would grow for ever.
//   - prism starts its job service inside beam.Run, but the launcher needs the
//     address before: EnsureJobService starts it and sets --endpoint.
//   - With prism in this process, --async would let the job die with the
//     command: launch and reconcile refuse it unless --endpoint names a job
//     server (CheckAsync). Other runners keep --async.
//   - One output watermark per stage, from the last bundle's residuals: the
//     folder source shares a watermark.Board per source (shared.go) so a fast
//     partition cannot pass a slow one; --idle-advance=hold is prism-only.
//   - Loopback workers share the launcher's process and Teardown is never
//     promised: the write verbs keep reference-counted sink handles, closed by
//     CloseShared after the job, and LastWrite tells a graceful stop when
//     output settled (sinks/sink/write.go, so that the job graph links no
//     runner). Elsewhere the sinks' revision rules carry correctness.
//   - The SDK stages an empty os.TempDir()/beamloopbackworker-* file as a
//     loopback job's worker binary and never removes it: launch, reconcile
//     and the tests remove their job's once it ends (placeholder.go).
//   - No backpressure (issue #26): the read-ahead account (internal/flow)
//     pauses the source while no read fits under --read-ahead; only with
//     in-process workers, since Flink and Dataflow have their own.
//   - Timers releasing held batches make the heap's live size spike, and
//     GOGC=100 doubles each spike into the goal (issue #26): with prism in
//     this process the GC pacer (gcpace.go) holds the goal at 1.7 times the
//     median live heap unless GOGC or GOMEMLIMIT is set.
package localrunner
