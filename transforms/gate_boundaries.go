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
// Why the windows below: the first data of a window that arrives after the
// watermark passed its end (a returning partition) must be marked AfterEnd
// so that the window starts with a LATE row (SPEC §4). The key can only
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

// heldFor says whether a batch stamped ts must wait before it is judged,
// and until when: the latest of the boundaries this bundle armed on the
// gate key (armedHere) that lie after the key's known watermark and before
// ts. It is judged once that boundary's timer fired (a release timer just
// after it).
//
// Why: a key learns the watermark only from its boundary timers, and
// prism hands a key's data and timers over in timestamp order, so a batch
// stamped after a boundary is judged after that boundary's timer fired,
// and records read after the watermark passed a window's end are late
// (SPEC §4). But a timer set in this bundle (by an announcement, or by the
// batch's own events, armEvents) cannot fire before the rest of the
// bundle: a gate behind its source takes a window's announcement and
// the later records of the same key in one bundle, and a batch can even
// come before its window's announcement (AnnounceWindows is a stage of its
// own), when only its own events arm the window. Without the wait it
// judged C of SPEC §7 on time (CI on 5cb2bdc and f46b313: ON_TIME 170;
// TestBatchAheadOfItsAnnouncementWaitsForTheEnd). Waiting until
// that boundary, not until ts, keeps the order prism gives when the timer
// was set earlier: the batch waits for the watermark to reach the boundary,
// not for the batch's own partition watermark, which may be ahead of the
// pipeline's. A gate that keeps up holds nothing.
func heldFor(armedHere []int64, known, ts int64) (until int64, hold bool) {
	for _, b := range armedHere {
		if b > known && b < ts && (!hold || b > until) {
			until, hold = b, true
		}
	}
	return until, hold
}
