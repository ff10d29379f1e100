// Package faults injects failures at the commit boundaries of SPEC §8 and
// the seed's test matrix, for tests that run the real binary:
//
//	REVENUE_FAULTS=point:N[,point:N]
//
// makes the N-th pass through a point fire. The points:
//
//	crash-after-read        the source read a record; state not yet committed (SIGKILL)
//	fail-before-sink-write  state and revisions are updated; the sink write fails for good
//	crash-after-sink-write  a sink transaction committed; the process dies before anything else (SIGKILL)
//	pubsub-crash-after-{pull,archive,ack,emit}  the Pub/Sub reader's boundaries, per batch (SIGKILL)
//
// With the variable unset every check is one atomic load.
package faults

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Env is the variable that arms the points.
const Env = "REVENUE_FAULTS"

// The points.
const (
	CrashAfterRead      = "crash-after-read"
	FailBeforeSinkWrite = "fail-before-sink-write"
	CrashAfterSinkWrite = "crash-after-sink-write"
)

var (
	armed  atomic.Bool
	once   sync.Once
	plan   map[string]int64
	passes sync.Map // point -> *atomic.Int64
)

func init() { armed.Store(os.Getenv(Env) != "") }

func load() {
	plan = map[string]int64{}
	for _, item := range strings.Split(os.Getenv(Env), ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
			plan[name] = v
		}
	}
}

// Fire counts a pass through point and reports whether it is the armed one.
func Fire(point string) bool {
	if !armed.Load() {
		return false
	}
	once.Do(load)
	n, ok := plan[point]
	if !ok {
		return false
	}
	c, _ := passes.LoadOrStore(point, new(atomic.Int64))
	return c.(*atomic.Int64).Add(1) == n
}

// Crash kills this process without any cleanup, as SIGKILL would.
func Crash(point string) {
	fmt.Fprintf(os.Stderr, "faults: %s fired: killing the process\n", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// The Pub/Sub reader's commit boundaries (io/sources/pubsub): a pulled batch
// is archived, then acknowledged, then emitted, then claimed. Each point
// kills the process right after its step, for the n-th batch.
const (
	PubSubAfterPull    = "pubsub-crash-after-pull"
	PubSubAfterArchive = "pubsub-crash-after-archive"
	PubSubAfterAck     = "pubsub-crash-after-ack"
	PubSubAfterEmit    = "pubsub-crash-after-emit"
)
