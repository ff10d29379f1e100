package localrunner

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, median uint64
		want         int
	}{
		{0, 0, 100},
		{24 * mib, 24 * mib, 70},  // a typical cycle: the goal at 1.7× the median
		{20 * mib, 24 * mib, 100}, // below the median: never above GOGC=100's goal
		{32 * mib, 24 * mib, 27},  // a spike: the goal stays at 40.8 MiB, not 64
		{34 * mib, 24 * mib, 25},  // 1.7×median−live is 6.8 MiB, 20 %: held at minPercent
		{48 * mib, 24 * mib, 25},  // the median's goal or more: minPercent
		{30 * mib, 24 * mib, 36},  // 40.8 MiB goal from 30 MiB live
	} {
		if got := gcPercentFor(c.live, c.median); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.median/mib, got, c.want)
		}
	}
}

// TestPacerWaitsThenPacesSpikes: nothing is set before paceWindow
// collections, then a typical cycle's goal is 1.7× the median, a spike
// lowers GOGC to hold the goal there, the next typical cycle restores 70,
// and a lasting rise moves the median, the goal with it.
func TestPacerWaitsThenPacesSpikes(t *testing.T) {
	p := &pacer{percent: 100}
	observe := func(live uint64, want int, changed bool) {
		t.Helper()
		if got, ch := p.observe(live); got != want || ch != changed {
			t.Fatalf("cycle %d: observe(%d) = %d, %v; want %d, %v", p.cycles, live, got, ch, want, changed)
		}
	}
	for range paceWindow - 2 {
		observe(100, 100, false)
	}
	observe(300, 100, false) // a spike in start-up: Go's own goal
	observe(100, 70, true)   // the window is full, median 100: the goal 170
	observe(150, 25, true)   // a spike: the goal stays near 170, not 300
	observe(100, 70, true)   // typical again
	observe(150, 25, true)   // a rise, not yet half the window
	for range 4 {
		observe(150, 25, false)
	}
	observe(150, 70, true) // lasting: the median is 150
}

// TestPacerFollowsCollections: armed in this process, the pacer observes
// every collection (runtime.GC) and lowers GOGC when the live heap jumps
// to three times its median; as the negative control, the same number of
// collections over a steady heap leaves GOGC at the steady goal's (about 70).
func TestPacerFollowsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	p := &pacer{percent: 100}
	p.arm()
	defer p.off.Store(true)
	base := make([]byte, 4<<20)
	collect := func(n int) {
		for range n {
			collectObserved(t, p)
		}
	}
	collect(2 * paceWindow)
	if _, percent := p.state(); percent < paceGoal-110 || percent > paceGoal-90 {
		t.Fatalf("steady heap: GOGC %d after %d collections, want %d±10", percent, 2*paceWindow, paceGoal-100)
	}
	spike := make([]byte, 3*len(base))
	collect(1)
	if _, percent := p.state(); percent != minPercent {
		t.Fatalf("after a spike to about 4× the median: GOGC %d, want %d", percent, minPercent)
	}
	runtime.KeepAlive(base)
	runtime.KeepAlive(spike)
}

// TestPrismInThisProcessStartsThePacer: UseSafeOptions for prism without an
// --endpoint (beam.Run starts prism here) arms the process's pacer, which
// then observes collections, unless the environment sets GOGC or GOMEMLIMIT.
func TestPrismInThisProcessStartsThePacer(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the pacer stays off by design")
	}
	defer func(exps string) { *jobopts.Experiments = exps; hooks.DisableHook(metricGateHook) }(*jobopts.Experiments)
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	UseSafeOptions("prism")
	collectObserved(t, gcPacer)
}

// collectObserved runs a collection and waits until p has observed one.
func collectObserved(t *testing.T, p *pacer) {
	t.Helper()
	before, _ := p.state()
	runtime.GC()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if c, _ := p.state(); c > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no collection observed within 10 s: the pacer is not running")
		}
	}
}

// state reports the collections p observed and the GOGC it set.
func (p *pacer) state() (cycles, percent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cycles, p.percent
}
