package launch

import (
	"context"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/bigquery"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/bqtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// TestBigQueryEndToEnd runs SPEC §7's minimal sequence through the streaming
// pipeline on prism into the BigQuery sink (a real BigQuery API server, see
// testing/bqtest), replays it, then reconciles against the dataset: reconcile
// reads the FINAL rows and audit tables from BigQuery, finds the too-late
// event D, and --apply writes the correction back.
func TestBigQueryEndToEnd(t *testing.T) {
	bqtest.Start(t)
	spec := sink.Spec{Scheme: sink.SchemeBigQuery, Project: bqtest.Project, Dataset: "revenue"}
	dir := writeLog(t, minimalLog...)
	o := stepping(options(t, dir))
	o.Sink = spec
	sum, out := run(t, o)

	wantCounts(t, sum, 8, 5, 1, 1, 0, 1)
	assertRows(t, "hourly_revenue_changelog", sum.Changelog(), minimalChangelog)
	assertRows(t, "hourly_revenue", sum.Current(), []model.Row{minimalChangelog[2], minimalChangelog[4], minimalChangelog[6]})
	for _, want := range []string{
		"rows emitted: ON_TIME 3, LATE 1, FINAL 3; sink accepted 7 revisions, 0 stale; 2 audit rows inserted",
		"now holds 3 windows (FINAL 3) and 7 revisions",
		"query: bq query --nouse_legacy_sql 'select * from `revenue-test.revenue.hourly_revenue`'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	ctx := context.Background()
	db, err := bigquery.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wantMinimalAudit(t, db)

	// A second run over the same log is seeded from the dataset's current
	// rows and writes no revision. BigQuery keeps no source progress, so
	// its audit records are appended again; every read keeps one per
	// position.
	sum2, _ := run(t, o)
	if sum2.Counts.SinkAccepted != 0 {
		t.Errorf("replay wrote %d revisions, want none", sum2.Counts.SinkAccepted)
	}
	assertRows(t, "hourly_revenue_changelog after replay", sum2.Changelog(), minimalChangelog)
	wantMinimalAudit(t, db)

	// Reconcile reads FINAL rows from BigQuery: D (7.00, too late) is the
	// only difference, and --apply writes FINAL 177 as revision 4.
	ro := reconcile.Defaults()
	ro.Source, ro.Sink, ro.RunID, ro.Apply = dir, spec, "bq1", true
	res, err := reconcile.Run(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode() != reconcile.ExitClean || len(res.Diffs) != 1 || res.Applied != 1 {
		t.Fatalf("reconcile: exit %d, %d diffs, %d applied; want exit %d, 1 diff, 1 applied: %+v",
			res.ExitCode(), len(res.Diffs), res.Applied, reconcile.ExitClean, res.Diffs)
	}
	if d := res.Diffs[0]; d.Classification != reconcile.ClassTooLate || d.WindowStart != ms("2026-11-04T10:00:00Z") ||
		d.Recomputed.RevenueMicros != 177_000_000 || d.Recomputed.Count != 4 {
		t.Errorf("diff = %+v, want too_late 10:00 recomputed 177.000000 / 4", d)
	}
	current, err := sinktest.CurrentRows(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	want := row("2026-11-04T10:00:00Z", 0, "177", 4, 4, model.Final)
	want.WindowEnd, want.Writer = ms("2026-11-04T11:00:00Z"), reconcile.Writer("bq1")
	if len(current) != 3 || current[0] != want {
		t.Errorf("current rows after --apply = %+v\nwant first %+v", current, want)
	}
	diffs, err := db.Diffs(ctx)
	if err != nil || len(diffs) != 1 || diffs[0].AppliedRevision == nil || *diffs[0].AppliedRevision != 4 {
		t.Errorf("reconcile_diffs = %+v, %v; want one row applied as revision 4", diffs, err)
	}
	ro.RunID = "bq2"
	again, err := reconcile.Run(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	if again.ExitCode() != reconcile.ExitClean || again.Applied != 0 {
		t.Errorf("second reconcile: exit %d, %d applied, diffs %+v; want clean", again.ExitCode(), again.Applied, again.Diffs)
	}
}
