package sources

import (
	"sync"
	"time"
)

// DefaultSettle is the default --settle: how long a followed file must stay
// unchanged before its last line, written without a newline, is read.
const DefaultSettle = 10 * time.Second

// tails registers the followed files ending in a line without a newline and
// when each size was first seen. A cache: losing it only restarts a wait.
var tails sync.Map // tailKey -> tailSeen

type tailKey struct{ source, partition, file string }

type tailSeen struct {
	size  int64 // bytes of the file when first seen at this size
	since int64 // processing time (ms) of that sighting
}

// PendingTails is the number of followed files whose unterminated last line
// waits to settle, as seen by the readers in this process.
func PendingTails() int {
	n := 0
	tails.Range(func(any, any) bool { n++; return true })
	return n
}

// idleLogEvery is how often, at most, a source logs that its watermark
// advances because every partition is idle.
const idleLogEvery = time.Minute

// idleLog remembers when each source last logged an all-idle advance.
var idleLog = &throttle{last: map[string]int64{}}

type throttle struct {
	mu   sync.Mutex
	last map[string]int64
}

// due reports whether key may log at now (ms), and if so records it.
func (t *throttle) due(key string, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[key]; ok && now-last < idleLogEvery.Milliseconds() {
		return false
	}
	t.last[key] = now
	return true
}
