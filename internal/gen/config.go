// Package gen writes realistic raw logs of purchase events (SPEC §6 layout) with everything the
// job must survive, deterministically from a seed. Stats classifies every line and carries the
// exact hourly totals a correct job ends with; the classification holds for any out-of-order
// bound up to Config.Margin.
package gen

import (
	"fmt"
	"time"
)

// Config shapes a generated log. Rates are fractions of Events.
type Config struct {
	Seed int64
	// Start is the first arrival instant (UTC) and Span the arrival period.
	// Span must exceed Window + Lateness for too-late events to exist.
	Start time.Time
	Span  time.Duration

	Partitions        int
	Events            int // distinct purchases, before retries
	FilesPerPartition int

	// Identical and conflicting retries, offline uploads (LateDelay behind arrival), too-late
	// events (TooLateDelay behind) and malformed lines.
	DupRate, ConflictRate, LateRate, TooLateRate, MalformedRate float64

	// Disorder is the jitter of event_time behind arrival (within the bound).
	Disorder time.Duration
	// LateDelay[1] must not exceed Lateness; TooLateDelay[0] must exceed
	// Window + Lateness.
	LateDelay, TooLateDelay [2]time.Duration

	// IdlePartition (or -1) goes silent for IdleGap mid-span, then bursts.
	IdlePartition int
	IdleGap       time.Duration

	// Window and Lateness are the job's settings (to place events).
	Window, Lateness time.Duration

	// MaxLine is the reader's --max-line (0: 1 MiB), exceeded by the oversized line.
	MaxLine int

	// ArrivalField names a field holding each valid line's arrival (cmd/advise's clock), or "".
	ArrivalField string
}

// demoStart is fixed, so a log never depends on when it is generated.
var demoStart = time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)

// Demo is the log `go run ./cmd/launch` replays: about 41,000 lines over 30
// hours in 4 partitions, one of which goes silent for 90 minutes.
func Demo() Config {
	return Config{
		Seed:              20261104,
		Start:             demoStart,
		Span:              30 * time.Hour,
		Partitions:        4,
		Events:            40_000,
		FilesPerPartition: 15,
		DupRate:           0.03,
		ConflictRate:      0.003,
		LateRate:          0.02,
		TooLateRate:       0.002,
		MalformedRate:     0.001,
		Disorder:          5 * time.Minute,
		LateDelay:         [2]time.Duration{30 * time.Minute, 20 * time.Hour},
		TooLateDelay:      [2]time.Duration{26 * time.Hour, 29 * time.Hour},
		IdlePartition:     3,
		IdleGap:           90 * time.Minute,
		Window:            time.Hour,
		Lateness:          24 * time.Hour,
		ArrivalField:      "received_at",
	}
}

// Validate refuses a Config whose promises (see the package doc) cannot hold.
func (c Config) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"DupRate", c.DupRate}, {"ConflictRate", c.ConflictRate}, {"LateRate", c.LateRate},
		{"TooLateRate", c.TooLateRate}, {"MalformedRate", c.MalformedRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("gen: %s must be in [0, 1], got %v", r.name, r.v)
		}
	}
	switch {
	case c.Partitions < 1:
		return fmt.Errorf("gen: Partitions must be at least 1, got %d", c.Partitions)
	case c.Events < 0:
		return fmt.Errorf("gen: Events must not be negative, got %d", c.Events)
	case c.FilesPerPartition < 1:
		return fmt.Errorf("gen: FilesPerPartition must be at least 1, got %d", c.FilesPerPartition)
	case c.Span <= 0:
		return fmt.Errorf("gen: Span must be positive, got %v", c.Span)
	case c.Window <= 0 || (24*time.Hour)%c.Window != 0:
		return fmt.Errorf("gen: Window must divide 24h, got %v", c.Window)
	case c.Lateness < 0:
		return fmt.Errorf("gen: Lateness must not be negative, got %v", c.Lateness)
	case c.LateRate+c.TooLateRate > 1:
		return fmt.Errorf("gen: LateRate + TooLateRate must not exceed 1, got %v", c.LateRate+c.TooLateRate)
	case c.Disorder < 0:
		return fmt.Errorf("gen: Disorder must not be negative, got %v", c.Disorder)
	case c.LateRate > 0 && (c.LateDelay[0] < 0 || c.LateDelay[0] > c.LateDelay[1]):
		return fmt.Errorf("gen: LateDelay must be an interval [lo, hi] with 0 <= lo <= hi, got %v", c.LateDelay)
	case c.LateRate > 0 && c.LateDelay[1] > c.Lateness: // else Stats would lie
		return fmt.Errorf("gen: LateDelay[1] (%v) must not exceed Lateness (%v)", c.LateDelay[1], c.Lateness)
	case c.TooLateRate > 0 && c.TooLateDelay[0] > c.TooLateDelay[1]:
		return fmt.Errorf("gen: TooLateDelay must be an interval [lo, hi] with lo <= hi, got %v", c.TooLateDelay)
	case c.TooLateRate > 0 && c.TooLateDelay[0] <= c.Window+c.Lateness:
		return fmt.Errorf("gen: TooLateDelay[0] (%v) must exceed Window + Lateness (%v)", c.TooLateDelay[0], c.Window+c.Lateness)
	case c.IdlePartition < -1 || c.IdlePartition >= c.Partitions:
		return fmt.Errorf("gen: IdlePartition must be -1 or a partition index below %d, got %d", c.Partitions, c.IdlePartition)
	case c.IdlePartition >= 0 && (c.IdleGap <= 0 || c.IdleGap >= c.Span):
		return fmt.Errorf("gen: IdleGap must be positive and shorter than Span, got %v", c.IdleGap)
	case c.MaxLine < 0:
		return fmt.Errorf("gen: MaxLine must not be negative, got %d", c.MaxLine)
	}
	return nil
}

// Margin is the largest out-of-order bound for which the Stats' verdicts
// hold (see the package doc).
func (c Config) Margin() time.Duration {
	if c.TooLateRate == 0 {
		return c.Lateness // no too-late events: any bound up to the lateness works
	}
	return c.TooLateDelay[0] - c.Window - c.Lateness
}

// Total is an exact window total.
type Total struct {
	RevenueMicros int64
	Count         int64
}

// Stats says what Write put in the log:
// Lines = Blank + Malformed + Events + Duplicates + Conflicts + (TooLate - TooLateEvents).
type Stats struct {
	Lines, Blank int
	Events       int // distinct purchases
	// Duplicates and Conflicts are retries of counted events (too-late copies are in TooLate).
	Duplicates, Conflicts int
	// Late: offline uploads (counted); Backlog: the idle partition's burst.
	Late, Backlog int
	// TooLate counts too-late lines, copies included; TooLateEvents purchases.
	TooLate, TooLateEvents int
	Malformed              int
	MalformedKinds         map[string]int // by expected reason
	// MissingWindows (epoch ms) hold only too-late events: reconcile must find them.
	MissingWindows []int64

	Partitions []string
	Files      int

	// Counted is the expected FINAL total per window start (epoch ms); All adds too-late events.
	Counted, All map[int64]Total
}
