package sources

import (
	"sync"
	"time"
)

// DefaultSettle is the default --settle: how long a followed file must stay
// unchanged before its last line, written without a newline, is read. Long
// enough for a producer between the bytes of a line and its newline, short
// enough that a producer that never ends its last line is not kept waiting.
const DefaultSettle = 10 * time.Second

// tails is the process-wide registry of followed files that end in a line
// without a newline: when each size was first seen, for the settle time, and
// what the progress line reports as pending. It is a cache: losing it only
// restarts a wait.
var tails sync.Map // tailKey -> tailSeen

type tailKey struct{ source, partition, file string }

type tailSeen struct {
	size  int64 // bytes of the file when first seen at this size
	since int64 // processing time (ms) of that sighting
}

// PendingTails is the number of followed files whose unterminated last line
// waits to settle, as seen by the readers in this process (prism's loopback
// harness runs them in the launcher; a remote runner's workers log instead).
func PendingTails() int {
	n := 0
	tails.Range(func(any, any) bool { n++; return true })
	return n
}
