package transforms_test

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/runnertest"
	"github.com/revenue-stream/hourly/testing/scenario"
)

func TestMain(m *testing.M) {
	localrunner.UseSafeOptions("prism")
	os.Exit(ptest.MainRet(m))
}

// TestPositionOrderSkewOnPrism runs the whole pipeline on prism with
// --dedup-order=position while p3 lags the other partitions by an hour of
// event time, retries and conflicting copies in every partition: the FINAL
// rows equal testing/oracle's, and read = counted + duplicates + conflicts
// + quarantined + too_late.
//
//	go test ./transforms -run PositionOrderSkewOnPrism -v -count=1
func TestPositionOrderSkewOnPrism(t *testing.T) {
	readAt := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Date(2026, 11, 4, 8, 0, 0, 0, time.UTC)
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.DedupOrder = pipeline.OrderPosition
	sc := scenario.New(o.Watermark, o.Event, readAt)
	due := map[string][]string{}
	parts := map[string][]model.Record{}
	for m := range 150 {
		for _, p := range []string{"p0", "p1", "p2", "p3"} {
			base := start.Add(time.Duration(m) * time.Minute)
			if p == "p3" {
				base = base.Add(-time.Hour)
			}
			for _, line := range due[fmt.Sprint(p, " ", m)] {
				sc.Line(p, line)
			}
			for i := range 2 {
				id := fmt.Sprintf("%s-%d-%d", p, m, i)
				et := base.Add(time.Duration(i) * 20 * time.Second).Format(time.RFC3339)
				user := "u" + strconv.Itoa(i)
				sc.Purchase(p, id, et, user, strconv.Itoa(1+m%9))
				if n := 2*m + i; n%7 == 3 {
					k := fmt.Sprint(p, " ", m+1)
					due[k] = append(due[k], fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":%q,"amount":%q}`, id, et, user, strconv.Itoa(1+m%9)))
				} else if n%31 == 5 {
					k := fmt.Sprint(p, " ", m+2)
					due[k] = append(due[k], fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":%q,"amount":"99"}`, id, et, user))
				}
			}
		}
		sc.AdvanceWatermark()
	}
	for _, r := range sc.Records {
		parts[r.Partition] = append(parts[r.Partition], r)
	}
	set := oracle.DefaultSettings(readAt)
	set.Watermark, set.Event, set.Triggers = o.Watermark, o.Event, o.Triggers
	want := oracle.ReplayRecords(parts, set)
	if want.Err != nil {
		t.Fatal(want.Err)
	}

	p, s := beam.NewPipelineWithRoot()
	out, err := pipeline.Build(s, sc.Create(s), o)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect.Into[model.Row](s, out.Rows, "rows")
	conflicts := collect.Into[model.Conflict](s, out.Conflicts, "conflicts")
	pr, err := runnertest.Run(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	counts := collect.Counts(pr)
	if err := counts.Check(); err != nil {
		t.Error(err)
	}
	final := map[oracle.Key]model.Row{}
	for _, r := range rows.Values() {
		k := oracle.Key{WindowStart: r.WindowStart, Dims: r.Dims}
		if r.Revision > final[k].Revision {
			final[k] = r
		}
	}
	got := map[oracle.Key]oracle.Total{}
	for k, r := range final {
		if r.State != model.Final {
			t.Errorf("%v: last row %s, want FINAL", k, r.State)
		}
		got[k] = oracle.Total{RevenueMicros: r.RevenueMicros, Count: r.EventCount}
	}
	if !maps.Equal(got, want.Final) {
		t.Errorf("FINAL rows %v\nwant (oracle) %v", got, want.Final)
	}
	if counts.Read != int64(want.Read) || counts.Counted != int64(want.Counted) || counts.Duplicates != int64(want.Duplicates) ||
		counts.Conflicts != int64(len(want.Conflicts)) || len(conflicts.Values()) != len(want.Conflicts) || counts.TooLate != int64(len(want.TooLate)) {
		t.Errorf("counts %s, %d conflict rows; oracle: read %d counted %d duplicates %d conflicts %d too_late %d",
			counts.Identity(), len(conflicts.Values()), want.Read, want.Counted, want.Duplicates, len(want.Conflicts), len(want.TooLate))
	}
	t.Logf("%d windows; %s", len(got), counts.Identity())
}
