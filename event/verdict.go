package event

// Verdict is what SPEC §4 decides for a valid event once its window's
// closing is known: counted, dropped as an identical copy, set aside as a
// conflict, or too late.
type Verdict uint8

const (
	// Counted: the first copy of its event_id that reached an open window.
	Counted Verdict = iota + 1
	// Duplicate: a copy with the counted copy's fingerprint; dropped.
	Duplicate
	// Conflict: a copy with another fingerprint; the conflict stream, never
	// summed.
	Conflict
	// TooLate: its window was closed, whatever dedup would have said.
	TooLate
)

var verdictNames = [...]string{"", "counted", "duplicate", "conflict", "too_late"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v != 0 {
		return verdictNames[v]
	}
	return "unknown"
}

// Seen is what a replay remembers of one event_id: whether a copy was
// counted, and that copy's fingerprint. The zero value is an id never seen
// (or forgotten: a dedup horizon that passed).
//
// It is the rule of a replay that judges the copies of an id in order (the
// offline oracle, the advisor): the stream's dedup state keeps the same
// facts per id in its own layout.
type Seen struct {
	Counted     bool
	Fingerprint uint64
}

// Judge applies SPEC §4's order after validation to the next copy of the
// id, with fingerprint fp: the too-late gate first (closed: its window is
// closed for this copy, even when it is a copy), then dedup. A too-late copy
// leaves nothing to remember, so a later copy that reaches an open window
// (from another partition) is the one counted.
func (s *Seen) Judge(fp uint64, closed bool) Verdict {
	switch {
	case closed:
		return TooLate
	case !s.Counted:
		*s = Seen{Counted: true, Fingerprint: fp}
		return Counted
	case s.Fingerprint == fp:
		return Duplicate
	}
	return Conflict
}
