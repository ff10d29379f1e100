// Package localrunner holds what exists only because of the local runner,
// prism (Beam v2.77.0), so that the DoFns read as runner-agnostic Beam and a
// reader knows exactly what changes on Flink or Dataflow.
//
// Each entry is a prism trap, where it is handled, and what it means on a
// distributed runner. None of them may carry correctness there: a
// process-wide variable here is at most a cache whose loss costs time.
//
//   - Runner-initiated splits replay processed elements
//     (apache/beam#35771): prism splits any bundle that makes no visible
//     progress for a while, stateful ones with timers included, and the SDK
//     then processes some elements twice; conservation broke by 5,465 of
//     1,000,000 records. UseSafeOptions adds DisableSplitExperiment; other
//     runners ignore the experiment (options.go).
//   - Lost metric updates (prism jobservices/metrics.go,
//     unprocessedPayloads): a bundle reporting a short id prism has not
//     resolved yet can overwrite another bundle's payload for the same id.
//     The metric gate, a worker response hook enabled by UseSafeOptions,
//     holds such a response until the worker has described the id
//     (metricgate.go). Elsewhere the hook only delays a response briefly
//     the first time an id appears.
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
// The dedup step's shard cache (transforms/dedup_state.go) is not listed: it
// is a per-worker cache valid on any runner, checked against a token in
// state, whose loss costs a reload.
package localrunner
