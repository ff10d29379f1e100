package sources

import (
	"sync"
	"time"
)

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
