package transforms

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/revenue-stream/hourly/triggers"
)

// maxGapWindows bounds how many windows below an announced one a shard arms
// (see windowsToArm): with tiny windows and a long lateness the range could
// otherwise cost thousands of timers per shard.
const maxGapWindows = 64

// windowsToArm lists the windows a shard arms when window start is
// announced to it: start itself, and the windows below it that may still be
// open when data of start moves the watermark, those whose end is after
// start - allowed lateness - bound - one window, and whose end the shard does
// not know to be passed yet (known).
//
// Why the windows below: the first data of a window that arrives after the
// watermark passed its end (a returning partition) must be marked AfterEnd
// so that the window starts with a LATE row (SPEC §4). The shard can only
// know that if some timer at or after that end fired on it; the announced
// window's own timers come too late (they are set when its first data
// arrives), but any watermark past the window's end came from data of a
// higher window, whose announcement arms this range. The list is ascending
// and at most maxGapWindows+1 long, the nearest windows kept.
func windowsToArm(p triggers.Policy, start, boundMs, known int64) []int64 {
	w := p.Window.Milliseconds()
	low := p.WindowStart(start - p.AllowedLateness.Milliseconds() - boundMs - w)
	low = max(low, start-maxGapWindows*w)
	var out []int64
	for s := low; s < start; s += w {
		if p.WindowEnd(s) > known {
			out = append(out, s)
		}
	}
	return append(out, start)
}

// armAnnounced arms the windows a batch announces (see BatchByShard), so that
// every shard learns the end and close of every window whatever ids it holds.
func (f *dedupFn) armAnnounced(tp timers.Provider, st *shardState, windows []int64) {
	for _, start := range windows {
		for _, s := range windowsToArm(f.Policy, start, f.BoundMs, st.known) {
			f.arm(tp, st, s) // a no-op for a window already armed
		}
	}
}
