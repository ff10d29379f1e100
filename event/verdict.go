package event

// Verdict is what SPEC §4 decides for a valid event.
type Verdict uint8

const (
	// Counted: the first copy of its event_id that reached an open window.
	Counted Verdict = iota + 1
	// Duplicate: a copy with the counted copy's fingerprint; dropped.
	Duplicate
	// Conflict: a copy with another fingerprint; never summed.
	Conflict
	// TooLate: its window was closed, whatever dedup would have said.
	TooLate
)

// Seen is what an in-order replay (the oracle, the advisor) remembers of one
// event_id: whether a copy was counted, and its fingerprint. The zero value is
// an id never seen or forgotten.
type Seen struct {
	Counted     bool
	Fingerprint uint64
}

// Judge applies SPEC §4's order to the id's next copy: the too-late gate
// first, then dedup. A too-late copy leaves nothing to remember, so a later
// copy reaching an open window is the one counted.
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
