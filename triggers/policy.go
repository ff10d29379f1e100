// Package triggers is the windowing and firing strategy of SPEC §4: fixed,
// UTC-aligned, half-open windows; EARLY refreshes on processing time; an
// ON_TIME firing when the watermark passes the window end; LATE firings for
// data within allowed lateness; a FINAL firing when the correction period
// closes; accumulating snapshots throughout.
//
// Why not Beam's own trigger machinery: measured on prism (Beam v2.77.0),
// CombinePerKey drops PaneInfo, late panes are batched until window expiry,
// late data is relabelled EARLY/ON_TIME under an early processing-time
// trigger, and records past the runner's allowed lateness are dropped without
// a trace. The SDK also hard-codes ClosingBehavior EMIT_IF_NONEMPTY, so no
// FINAL pane comes for free. So the pipeline keeps every element in the global
// window and derives firings itself, in stateful DoFns driven by the timers
// this package computes, and the firing→state rules below are plain Go.
package triggers

import (
	"fmt"
	"time"
)

// Policy is the strategy built from the settings of SPEC §2.
type Policy struct {
	// Window is the window size (default 1h). Windows are aligned to the Unix
	// epoch, which is UTC: 1h windows are UTC calendar hours.
	Window time.Duration
	// Early is the processing-time refresh period of EARLY rows; 0 turns
	// early firings off (and a bounded replay always runs with 0).
	Early time.Duration
	// AllowedLateness is how long after window_end a window stays correctable.
	AllowedLateness time.Duration
}

// Validate checks each setting, naming the flag it came from.
func (p Policy) Validate() error {
	switch {
	case p.Window <= 0:
		return fmt.Errorf("--window must be positive, got %v", p.Window)
	case p.Window%time.Millisecond != 0:
		return fmt.Errorf("--window must be a whole number of milliseconds, got %v", p.Window)
	case (24*time.Hour)%p.Window != 0 && p.Window%(24*time.Hour) != 0:
		// Windows that do not tile a UTC day would drift across calendar days.
		return fmt.Errorf("--window must divide 24h or be a multiple of it, got %v", p.Window)
	case p.Early < 0:
		return fmt.Errorf("--early must not be negative (0s turns early firings off), got %v", p.Early)
	case p.AllowedLateness < 0:
		return fmt.Errorf("--allowed-lateness must not be negative, got %v", p.AllowedLateness)
	case p.AllowedLateness%time.Millisecond != 0:
		return fmt.Errorf("--allowed-lateness must be a whole number of milliseconds, got %v", p.AllowedLateness)
	}
	return nil
}

// WindowStart returns the start (epoch ms) of the window holding ts.
func (p Policy) WindowStart(ts int64) int64 {
	w := p.Window.Milliseconds()
	start := ts - ts%w
	if ts%w < 0 { // floor for instants before 1970
		start -= w
	}
	return start
}

// WindowEnd is the exclusive end of the window starting at start.
func (p Policy) WindowEnd(start int64) int64 { return start + p.Window.Milliseconds() }

// CloseTime is window_end + allowed lateness: the FINAL firing.
func (p Policy) CloseTime(start int64) int64 {
	return p.WindowEnd(start) + p.AllowedLateness.Milliseconds()
}

// Closed is the too-late verdict of SPEC §4: a window is closed for a record
// when end + allowed_lateness <= W. W is model.NoWatermark (MinInt64) when
// unknown, which closes nothing.
func (p Policy) Closed(start, w int64) bool { return p.CloseTime(start) <= w }
