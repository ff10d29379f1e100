package reconcile

// Parse reads a command line into Options as Main does, without checking the settings.
func Parse(args []string) (Options, error) {
	p, err := command.Parse(args)
	return p.Options, err
}

// AddCopies folds in a whole id's copies with the evidence: the plain-Go
// form of what the Beam step does (tests only).
func AddCopies(copies []Copy, ev Evidence) Choice {
	var ch Choice
	for _, c := range copies {
		fp, ok := ev.Counted[c.EventID]
		ch.Add(c, fp, ok, ev.TooLate[c.Position])
	}
	return ch
}

// Evidence is what the stream recorded about the ids being chosen, read
// from the sink's audit tables.
type Evidence struct {
	// Counted maps an event_id to conflict_events.first_fingerprint.
	Counted map[string]uint64
	// TooLate holds the source positions of too_late_events.
	TooLate map[string]bool
}
