package sinks

import (
	"context"
	"errors"

	"github.com/revenue-stream/hourly/model"
)

// Tally is what a run's summary shows of a sink, counted where the rows are
// stored rather than read back whole.
type Tally struct {
	// Current counts hourly_revenue's rows (one per key) by result state.
	Current                                    map[model.ResultState]int64
	Changelog, TooLate, Conflicts, Quarantined int64
	// Latest is the last rows of CurrentRows, in its order.
	Latest []model.Row
}

// Keys is how many keys hourly_revenue holds.
func (t Tally) Keys() (n int64) {
	for _, c := range t.Current {
		n += c
	}
	return n
}

// Tally counts the rows the reads give: jsonl reads its files whole anyway.
func (j *JSONL) Tally(ctx context.Context, latest int) (Tally, error) {
	t := Tally{Current: map[model.ResultState]int64{}}
	log, err1 := j.Changelog(ctx)
	current, err2 := j.CurrentRows(ctx)
	late, err3 := j.TooLate(ctx)
	conflicts, err4 := j.Conflicts(ctx)
	quarantined, err5 := j.Quarantined(ctx)
	for _, r := range current {
		t.Current[r.State]++
	}
	if latest > 0 {
		t.Latest = current[max(0, len(current)-latest):]
	}
	t.Changelog, t.TooLate, t.Conflicts, t.Quarantined = int64(len(log)), int64(len(late)), int64(len(conflicts)), int64(len(quarantined))
	return t, errors.Join(err1, err2, err3, err4, err5)
}
