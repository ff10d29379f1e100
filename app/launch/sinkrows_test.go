package launch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// Current reads the sink's current row of every key now (nil for a sink
// with nothing to read back): the summary itself only counts them.
func (s *Summary) Current() []model.Row { return s.readBack(sink.Query{Current: true}) }

// Changelog reads every revision the sink holds now.
func (s *Summary) Changelog() []model.Row { return s.readBack(sink.Query{}) }

func (s *Summary) readBack(q sink.Query) []model.Row {
	if !s.view.Readable {
		return nil
	}
	ctx := context.Background()
	db, ok, err := sink.OpenReader(ctx, s.view.spec)
	if err != nil || !ok {
		panic(fmt.Sprintf("reading sink %s back: %v (exists %v)", s.Sink, err, ok))
	}
	defer db.Close()
	rows, err := sink.Rows(db.Changelog(ctx, q))
	if err != nil {
		panic(fmt.Sprintf("reading sink %s back: %v", s.Sink, err))
	}
	return rows
}

// wantSinkFigures checks the summary's sink lines against the sink read
// back whole and counted: the figures the sink counts itself must be those.
func wantSinkFigures(t *testing.T, sum *Summary, out string) {
	t.Helper()
	current, changelog := sum.Current(), sum.Changelog()
	ctx := context.Background()
	db, _, err := sink.OpenReader(ctx, sum.view.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	late, err1 := sinktest.TooLate(ctx, db)
	conflicts, err2 := sinktest.Conflicts(ctx, db)
	quarantined, err3 := sinktest.Quarantined(ctx, db)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	byState := map[string]int64{}
	for _, r := range current {
		byState[r.State.String()]++
	}
	var want strings.Builder
	fmt.Fprintf(&want, "sink %s now holds %d windows (%s) and %d revisions; too_late_events %d, conflict_events %d, quarantined_events %d\n",
		sum.Sink, len(current), stateCounts(byState), len(changelog), len(late), len(conflicts), len(quarantined))
	if len(current) > 0 {
		rows := current[max(0, len(current)-latestRows):]
		fmt.Fprintf(&want, "\nlatest hourly rows (%d of %d):\n", len(rows), len(current))
		writeRows(&want, rows)
	}
	if !strings.Contains(out, want.String()) {
		t.Errorf("summary lacks the sink's figures as read back:\n%s\nin\n%s", want.String(), out)
	}
}
