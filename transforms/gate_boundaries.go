package transforms

import (
	"github.com/revenue-stream/hourly/triggers"
)

// maxGapWindows bounds how many windows below an announced one a gate key arms
// (see windowsToArm): with tiny windows and a long lateness the range could
// otherwise cost thousands of timers per gate key.
const maxGapWindows = 64

// windowsToArm lists the windows a gate key arms when window start is
// announced to it: start itself, and the windows below it that may still be
// open when data of start moves the watermark, those whose end is after
// start - allowed lateness - bound - one window, and whose end the key does
// not know to be passed yet (known).
//
// Why the windows below: a window whose first data comes after the
// watermark passed its end must start with a LATE row (SPEC §4), which the
// key knows only from a timer at or after that end. Such a watermark came
// from data of a higher window, whose announcement arms this range.
// Ascending, at most maxGapWindows+1 long.
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

// heldFor says whether a batch stamped ts must wait before it is judged,
// and until when: the latest of the boundaries this bundle armed on the
// gate key (armedHere) that lie after the key's known watermark and before
// ts. It is judged once that boundary's timer fired (a release timer just
// after it).
//
// Why: a key learns the watermark only from its boundary timers, which a
// runner delivers in timestamp order with the data; but a timer set in this
// bundle (by an announcement or the batch's own events) cannot fire before
// the rest of the bundle. Without the wait, SPEC §7's scenario C was judged
// on time (TestBatchAheadOfItsAnnouncementWaitsForTheEnd). Waiting for the
// boundary, not for ts, keeps the order a timer set earlier would give. A
// gate that keeps up holds nothing.
func heldFor(armedHere []int64, known, ts int64) (until int64, hold bool) {
	for _, b := range armedHere {
		if b > known && b < ts && (!hold || b > until) {
			until, hold = b, true
		}
	}
	return until, hold
}
