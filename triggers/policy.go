// Package triggers is the firing policy of SPEC §4 in plain Go: fixed UTC
// windows; EARLY, ON_TIME, LATE and FINAL rows of accumulating snapshots. No
// Beam triggers: on prism v2.77.0 panes lose PaneInfo, late data is relabelled
// and no FINAL pane comes, so stateful DoFns fire from timers computed here.
package triggers

import (
	"fmt"
	"time"
)

// Policy is the strategy built from the settings of SPEC §2.
type Policy struct {
	// Window is the window size, aligned to the Unix epoch (UTC hours for 1h).
	Window time.Duration
	// Early is the EARLY refresh period; 0 turns early firings off.
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

// WindowIndex numbers the window holding ts (epoch ms) from the epoch.
func (p Policy) WindowIndex(ts int64) int64 {
	w := p.Window.Milliseconds()
	i := ts / w
	if ts%w < 0 { // floor for instants before 1970
		i--
	}
	return i
}

// WindowStart returns the start (epoch ms) of the window holding ts.
func (p Policy) WindowStart(ts int64) int64 { return p.WindowIndex(ts) * p.Window.Milliseconds() }

// WindowEnd is the exclusive end of the window starting at start.
func (p Policy) WindowEnd(start int64) int64 { return start + p.Window.Milliseconds() }

// CloseTime is window_end + allowed lateness: the FINAL firing.
func (p Policy) CloseTime(start int64) int64 {
	return p.WindowEnd(start) + p.AllowedLateness.Milliseconds()
}

// Lifetime is window + allowed lateness: how long after its start a window
// takes records, and so the shortest dedup retention that cannot count a
// retry twice.
func (p Policy) Lifetime() time.Duration { return p.Window + p.AllowedLateness }

// Closed is the too-late verdict of SPEC §4: end + allowed_lateness <= w
// (model.NoWatermark closes nothing).
func (p Policy) Closed(start, w int64) bool { return p.CloseTime(start) <= w }
