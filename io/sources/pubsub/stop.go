package pubsub

import "sync/atomic"

// stopGen counts RequestStop calls. A source remembers the value it was built
// with and stops once the count has moved past it, so a pipeline built after
// a stop (the next test, a job restarted in the same process) runs normally.
var stopGen atomic.Int64

// RequestStop asks every Pub/Sub reader built before the call to stop
// gracefully, with the contract of the folder source (sources.RequestStop):
// it pulls nothing more (a batch being archived is finished, acknowledged and
// emitted first), keeps returning ResumeProcessingIn(PollInterval) with its
// watermark unchanged, and never finishes its restriction, because a
// finished restriction moves the watermark to the end of time and would
// write FINAL rows for windows whose correction period has not passed. The
// launcher then cancels the job; a restart replays the archive.
//
// The flag is process-wide: it reaches readers in this process, which is
// where prism's loopback SDK harness runs them. On a remote runner,
// stopping is the runner's cancel (or drain, see the package doc).
func RequestStop() { stopGen.Add(1) }

func stopRequested(gen int64) bool { return stopGen.Load() > gen }
