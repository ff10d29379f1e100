package reconcile

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
