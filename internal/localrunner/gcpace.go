package localrunner

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
)

// The GC's goal when prism runs in this process (issue #26). What waits
// between prism's stages lives in this heap and spikes when timers release
// what the gates held; GOGC=100 doubles each spike into the goal, so a longer
// replay peaks higher although it holds no more. The pacer sets the goal at
// paceGoal percent of the median of the last paceWindow live heaps, never
// above Go's own (docs/performance.md: 9 to 12 MiB less peak anon for 5 to
// 11 % more time). An explicit GOGC or GOMEMLIMIT switches it off.

// paceWindow is how many collections' live heaps the median spans; the
// pacer waits for that many before it sets anything, so a short run's
// start-up, whose live heap only grows, keeps Go's own goal.
const paceWindow = 16

// paceGoal is the goal in percent of the median live heap.
const paceGoal = 170

// minPercent bounds how far the pacer lowers GOGC under a spike far above
// the median: below it, collections would follow each other.
const minPercent = 25

// gcPercentFor is the GOGC that puts the next goal (live × (1 + GOGC/100))
// at paceGoal percent of the median live heap, between minPercent and 100.
func gcPercentFor(live, median uint64) int {
	if live == 0 {
		return 100
	}
	goal := median * paceGoal // in hundredths, as 100 × live below
	if goal <= 100*live {
		return minPercent
	}
	return min(100, max(minPercent, int((goal-100*live)/live)))
}

// pacer keeps the last paceWindow live heaps and the GOGC it set.
type pacer struct {
	mu      sync.Mutex
	lives   []uint64    // the last paceWindow live heaps, oldest first
	percent int         // the GOGC in force (100 until the pacer sets one)
	cycles  int         // collections observed
	off     atomic.Bool // stopped (tests): observe and set nothing more
}

// observe takes one collection's live heap and returns the GOGC to set and
// whether it changed.
func (p *pacer) observe(live uint64) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cycles++
	if len(p.lives) == paceWindow {
		p.lives = slices.Delete(p.lives, 0, 1)
	}
	p.lives = append(p.lives, live)
	want := 100
	if len(p.lives) == paceWindow {
		sorted := slices.Sorted(slices.Values(p.lives))
		want = gcPercentFor(live, sorted[paceWindow/2])
	}
	changed := want != p.percent
	p.percent = want
	return want, changed
}

var (
	gcPacer   = &pacer{percent: 100}
	pacerOnce sync.Once
)

// startPacer starts the pacer once in this process, unless GOGC or
// GOMEMLIMIT is set.
func startPacer() {
	pacerOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		gcPacer.arm()
	})
}

// arm plants a sentinel whose cleanup runs after the next collection:
// that collection's live heap is observed and a new sentinel planted, so
// the pacer runs once per cycle without a goroutine of its own.
func (p *pacer) arm() {
	sentinel := new([64]byte) // not a tiny allocation: its cleanup runs
	runtime.AddCleanup(sentinel, func(*pacer) {
		// The next sentinel first: once a cycle is observed, the next
		// collection has one to find (a test's runtime.GC() relies on it).
		if p.off.Load() {
			return
		}
		p.arm()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		if percent, changed := p.observe(sample[0].Value.Uint64()); changed {
			debug.SetGCPercent(percent)
		}
	}, p)
}
