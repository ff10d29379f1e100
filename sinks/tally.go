package sinks

import (
	"context"
	"errors"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Tally counts the rows the reads give: jsonl reads its files whole anyway.
func (j *JSONL) Tally(ctx context.Context, latest int) (sink.Tally, error) {
	t := sink.Tally{Current: map[model.ResultState]int64{}}
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
