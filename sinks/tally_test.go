package sinks

import (
	"context"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// testTally: the counts a sink gives are what reading every table back and
// counting would give (one row per revision and per source position, however
// often a batch was delivered), and Latest is the tail of CurrentRows, with
// window bounds in milliseconds that sort otherwise as TEXT.
func testTally(t *testing.T, u sinkUnderTest) {
	tallyAgreesWithReads(t, u.s, func() {
		b := auditBatch(t)
		b.Rows = []model.Row{
			snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
			snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
			snap(t, "2026-11-04T10:00:00Z", `{"shop":"a"}`, 1, model.Final, 1, 5),
			snap(t, "2026-11-04T10:00:00.500Z", "{}", 1, model.Early, 1, 7),
			snap(t, "2026-11-04T11:00:00Z", "{}", 1, model.OnTime, 1, 20_000_000),
			snap(t, "2026-11-04T09:00:00Z", "{}", 3, model.Final, 4, 400),
		}
		write(t, u.s, b)
		write(t, u.s, b) // a replayed delivery: BigQuery appends the audit rows again
	})
}

func tallyAgreesWithReads(t *testing.T, s sink.Reader, fill func()) {
	t.Helper()
	ctx := context.Background()
	empty, err := s.Tally(ctx, 3)
	if err != nil || empty.Keys() != 0 || empty.Changelog != 0 || empty.TooLate+empty.Conflicts+empty.Quarantined != 0 || len(empty.Latest) != 0 {
		t.Fatalf("tally of an empty sink = %+v, %v", empty, err)
	}
	fill()
	current := currentOf(t, s)
	byState := map[model.ResultState]int64{}
	for _, r := range current {
		byState[r.State]++
	}
	late, _ := s.TooLate(ctx)
	conflicts, _ := s.Conflicts(ctx)
	quarantined, _ := s.Quarantined(ctx)
	for _, latest := range []int{0, 1, 2, 3, len(current), len(current) + 5} {
		got, err := s.Tally(ctx, latest)
		if err != nil {
			t.Fatal(err)
		}
		if got.Keys() != int64(len(current)) || len(got.Current) != len(byState) {
			t.Errorf("tally counts current %v, want %v", got.Current, byState)
		}
		for st, n := range byState {
			if got.Current[st] != n {
				t.Errorf("tally counts %d %s rows, want %d", got.Current[st], st, n)
			}
		}
		if want := int64(len(changelogOf(t, s))); got.Changelog != want {
			t.Errorf("tally counts %d revisions, want %d", got.Changelog, want)
		}
		if got.TooLate != int64(len(late)) || got.Conflicts != int64(len(conflicts)) || got.Quarantined != int64(len(quarantined)) {
			t.Errorf("tally counts audit %d/%d/%d, want %d/%d/%d", got.TooLate, got.Conflicts, got.Quarantined, len(late), len(conflicts), len(quarantined))
		}
		wantRows(t, "latest rows", got.Latest, current[max(0, len(current)-latest):])
	}
}
