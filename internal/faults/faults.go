// Package faults injects failures at the commit boundaries of SPEC §8 and
// the seed's test matrix, for tests that run the real binary. It is armed
// only in a binary built with the faults build tag:
//
//	go build -tags faults ./cmd/launch
//	REVENUE_FAULTS=point:N[,point:N] ./launch ...
//
// makes the N-th pass through a point fire. The points:
//
//	crash-after-read        the source read a record; state not yet committed (SIGKILL)
//	fail-before-sink-write  state and revisions are updated; the sink write fails for good
//	crash-after-sink-write  a sink transaction committed; the process dies before anything else (SIGKILL)
//	pubsub-crash-after-{pull,archive,ack,emit}  the Pub/Sub reader's boundaries, per batch (SIGKILL)
//	uncount-duplicate       dedup drops a duplicate without counting it: the run breaks conservation
//
// Without the tag (every production build) Fire is a constant false, so the
// shipped binary ignores REVENUE_FAULTS.
package faults

// Env is the variable that arms the points in a faults build.
const Env = "REVENUE_FAULTS"

// The points.
const (
	CrashAfterRead      = "crash-after-read"
	FailBeforeSinkWrite = "fail-before-sink-write"
	CrashAfterSinkWrite = "crash-after-sink-write"
	// UncountDuplicate breaks SPEC §4's identity, so tests can show a run
	// that does not conserve fails.
	UncountDuplicate = "uncount-duplicate"
)

// The Pub/Sub reader's commit boundaries, per batch.
const (
	PubSubAfterPull    = "pubsub-crash-after-pull"
	PubSubAfterArchive = "pubsub-crash-after-archive"
	PubSubAfterAck     = "pubsub-crash-after-ack"
	PubSubAfterEmit    = "pubsub-crash-after-emit"
)
