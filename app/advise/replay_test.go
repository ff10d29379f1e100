package advise

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/launch"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// TestRecommendationReplaysOnPrism runs the advisor on a generated log,
// then the real pipeline (app/launch's Run on prism) with exactly the flags
// it recommends, and checks that the stream's figures are the ones the
// advisor predicted: the events and revenue that reached LATE revisions
// (from the sink's changelog: FINAL count minus ON_TIME count per window),
// the records too late, the duplicates and conflicts, and no copy counted
// twice.
//
// The log is one partition (a replay's LATE rows then follow that
// partition's watermark, as they would live) with no silence: the
// advisor's live model and a replay, which never idles, see the same
// watermarks, which the test checks too (nothing late or too late by
// idleness).
func TestRecommendationReplaysOnPrism(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline on prism")
	}
	dir, _ := writeGenLog(t, genConfig{start: genStart, partitions: 1, step: 20 * time.Second, slots: 1080, silent: -1, copies: true})
	o := Defaults()
	o.Source, o.ArrivalField = dir, "received_at"
	o.Try.Lateness = []time.Duration{time.Hour, 3 * time.Hour, 6 * time.Hour}
	o.Targets = Targets{LateSharePPM: 60_000, TooLateSharePPM: 20_000, OnTime: time.Hour}
	var summary bytes.Buffer
	a, err := Run(context.Background(), o, &summary)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("advice:\n%s", summary.String())
	rec := a.Recommendation
	if !rec.Met {
		t.Fatalf("no recommendation meets the targets: %v", rec.Misses)
	}
	if rec.Flags[2] == "--allowed-lateness=24h" {
		t.Fatalf("the recommendation keeps the default lateness (%v): the test should exercise a changed one", rec.Flags)
	}
	for _, row := range a.Idle {
		if row.Idle == rec.Outcome.Idle && (row.LateByIdle.Events != 0 || row.TooLateByIdle.Events != 0) {
			t.Fatalf("idleness changes verdicts at %v (%+v): a replay cannot show that", row.Idle, row)
		}
	}

	db, runReport := filepath.Join(t.TempDir(), "revenue.db"), filepath.Join(t.TempDir(), "run.json")
	lo, err := launch.Command.Parse(append(slices.Clone(rec.Flags), "--source="+dir, "--sink=sqlite:"+db, "--report="+runReport))
	if err != nil {
		t.Fatalf("cmd/launch refuses the recommended flags %v: %v", rec.Flags, err)
	}
	// One record per reader call: the runner sees the partition watermark
	// between records, as it would if they arrived one by one (a replay of
	// a whole file in one call is also correct, but writes ON_TIME rows
	// that hold the late data).
	lo.MaxPerCall = 1
	// Position order: the advisor counts the first copy in the file, and
	// arrival order on prism counted the later of two conflicting copies of
	// p0-1057 four lines apart in 4 of 72 runs (docs/capacity.md,
	// "Deterministic first copy"); in position order 20 runs of 20 agreed.
	lo.Pipeline.DedupOrder = pipeline.OrderPosition
	var out bytes.Buffer
	sum, err := launch.Run(context.Background(), lo, &out)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out.String())
	}
	c := sum.Counts
	if !sum.Conserved {
		t.Fatalf("conservation: %s", sum.Identity)
	}
	p := rec.Outcome
	for _, f := range []struct {
		name      string
		got, want int64
	}{
		{"counted", c.Counted, p.Records.Counted},
		{"duplicates", c.Duplicates, p.Records.Duplicates},
		{"conflicts", c.Conflicts, p.Records.Conflicts},
		{"too late records", c.TooLate, p.Records.TooLate},
		{"counted twice", c.Counted - (p.Fates.OnTime.Events + p.Fates.Late.Events), p.DoubleCounted.Events},
	} {
		if f.got != f.want {
			t.Errorf("%s: the stream has %d, the advisor predicted %d", f.name, f.got, f.want)
		}
	}

	s, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log, err := sinktest.ChangelogRows(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var late, onTime Tally
	byKey := map[int64][]model.Row{}
	for _, r := range log {
		byKey[r.WindowStart] = append(byKey[r.WindowStart], r)
	}
	for _, rows := range byKey {
		slices.SortFunc(rows, func(a, b model.Row) int { return int(a.Revision - b.Revision) })
		final := rows[len(rows)-1]
		if final.State != model.Final {
			t.Fatalf("window %s ends %s, not FINAL", model.FormatTime(final.WindowStart), final.State)
		}
		var on model.Row
		for _, r := range rows {
			if r.State == model.OnTime {
				on = r
			}
		}
		onTime.Events += on.EventCount
		onTime.RevenueMicros += on.RevenueMicros
		late.Events += final.EventCount - on.EventCount
		late.RevenueMicros += final.RevenueMicros - on.RevenueMicros
	}
	tot := p.Fates.Total()
	if late != p.Fates.Late || onTime != p.Fates.OnTime {
		t.Errorf("the stream's LATE revisions hold %+v (ON_TIME rows %+v); the advisor predicted %+v (%+v)", late, onTime, p.Fates.Late, p.Fates.OnTime)
	}
	// And so the shares it printed, rounded as printed.
	if got, want := shares(late, tot), shares(p.Fates.Late, tot); got != want {
		t.Errorf("late share: the stream's %s, the advisor's %s", got, want)
	}
	t.Logf("stream: %s; late %+v, on time %+v; predicted late %s, too late %s", sum.Identity, late, onTime,
		shares(p.Fates.Late, tot), shares(p.Fates.TooLate, tot))

	// The job's own delay histogram (its run report) beside the advisor's:
	// the same log read from its start gives the same lateness buckets.
	o.JobReport = runReport
	b, err := Analyze(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	j := b.Job
	if j == nil || j.Read != c.Read || j.TooLate != c.TooLate {
		t.Fatalf("job figures %+v, want the run's (read %d, too late %d)", j, c.Read, c.TooLate)
	}
	if got, want := j.Lateness.Counts(), b.Lateness.Buckets; !slices.Equal(got, want) {
		t.Errorf("the job's event_lateness buckets %v, the advisor's %v", got, want)
	}
	if j.Lateness.Total != b.Log.Valid {
		t.Errorf("the job measured %d valid events, the advisor read %d", j.Lateness.Total, b.Log.Valid)
	}
	var text bytes.Buffer
	if err := NewReport(b).WriteText(&text); err != nil || !bytes.Contains(text.Bytes(), []byte("event lateness (job)")) {
		t.Errorf("the summary does not show the job's figures (%v):\n%s", err, text.String())
	}
}
