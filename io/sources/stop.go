package sources

import "sync/atomic"

// stopGen counts RequestStop calls. A source remembers the value it was built
// with and stops once the count has moved past it, so a pipeline built after
// a stop (the next test, a restarted job in the same process) runs normally.
var stopGen atomic.Int64

// RequestStop asks every folder reader built before the call to stop
// gracefully: a follower finishes the file it is in (its last line read
// even without a newline, SPEC §3), then reads no further file, and keeps
// returning ResumeProcessingIn(PollInterval) with its watermark unchanged,
// never finishing its restriction (a finished restriction would move the
// watermark to the end of time and write FINAL rows for windows whose
// correction period has not passed). The launcher then cancels the job.
//
// The flag is process-wide: it reaches readers in this process, which is
// where prism's loopback SDK harness runs them. On a remote runner, stopping
// is the runner's drain. A pipeline built after the call is not affected:
// its readers compare against the generation they were built at.
func RequestStop() { stopGen.Add(1) }

func stopGeneration() int64 { return stopGen.Load() }

// stopRequested reports whether a reader built at generation gen must stop.
func stopRequested(gen int64) bool { return stopGen.Load() > gen }
