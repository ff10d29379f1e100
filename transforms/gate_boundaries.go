package transforms

import (
	"github.com/revenue-stream/hourly/triggers"
)

// maxGapWindows bounds how many windows below an announced one a gate key
// arms: tiny windows and a long lateness could cost thousands of timers.
const maxGapWindows = 64

// windowsToArm lists, ascending, the windows a gate key arms when window
// start is announced: start, and those below it still open when its data moves
// the watermark (end after start - lateness - bound - window, and after known).
// A window whose first data comes after its end must start LATE (SPEC §4),
// which the key learns only from a timer at or after that end.
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

// heldFor says whether a batch stamped ts must wait, and until when: the
// latest boundary this bundle armed on the key (armedHere) after the known
// watermark and before ts. A timer set in this bundle cannot fire before the
// rest of it; without the wait SPEC §7's scenario C was judged on time
// (TestBatchAheadOfItsAnnouncementWaitsForTheEnd).
func heldFor(armedHere []int64, known, ts int64) (until int64, hold bool) {
	for _, b := range armedHere {
		if b > known && b < ts && (!hold || b > until) {
			until, hold = b, true
		}
	}
	return until, hold
}
