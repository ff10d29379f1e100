package reconcile

import (
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// Range selects windows whose window_start is in [From, To); zero: every window in the raw log.
type Range struct {
	From, To       int64 // epoch ms
	HasFrom, HasTo bool
}

// All reports whether the range is the default: every window present.
func (r Range) All() bool { return !r.HasFrom && !r.HasTo }

// Contains reports whether start is in the range (always, for the zero Range).
func (r Range) Contains(start int64) bool {
	return (!r.HasFrom || start >= r.From) && (!r.HasTo || start < r.To)
}

func (r Range) String() string {
	switch {
	case r.All():
		return "every window present in the raw log"
	case !r.HasTo:
		return "[" + model.FormatTime(r.From) + ", end)"
	case !r.HasFrom:
		return "[start, " + model.FormatTime(r.To) + ")"
	}
	return "[" + model.FormatTime(r.From) + ", " + model.FormatTime(r.To) + ")"
}

// ParseRange reads --from and --to (RFC 3339 whole UTC hours, either open) or --date=YYYY-MM-DD.
func ParseRange(from, to, date string) (Range, error) {
	var r Range
	if date != "" {
		if from != "" || to != "" {
			return Range{}, fmt.Errorf("--date cannot be combined with --from or --to")
		}
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return Range{}, fmt.Errorf("--date %q: want YYYY-MM-DD (a UTC day)", date)
		}
		return Range{From: d.UnixMilli(), To: d.AddDate(0, 0, 1).UnixMilli(), HasFrom: true, HasTo: true}, nil
	}
	var err error
	if from != "" {
		if r.From, err = parseHour("--from", from); err != nil {
			return Range{}, err
		}
		r.HasFrom = true
	}
	if to != "" {
		if r.To, err = parseHour("--to", to); err != nil {
			return Range{}, err
		}
		r.HasTo = true
	}
	if r.HasFrom && r.HasTo && r.From >= r.To {
		return Range{}, fmt.Errorf("--from %s must be before --to %s (the range is [from, to))", from, to)
	}
	return r, nil
}

func parseHour(flag, v string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want an RFC 3339 hour such as 2026-11-04T10:00:00Z", flag, v)
	}
	if t.UTC().Truncate(time.Hour) != t.UTC() {
		return 0, fmt.Errorf("%s %q: not a whole UTC hour (%s)", flag, v, t.UTC().Format(time.RFC3339Nano))
	}
	return t.UnixMilli(), nil
}
