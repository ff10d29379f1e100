package pipeline_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/scenario"
)

func TestMain(m *testing.M) {
	if os.Getenv("DEBUG_PRISM") != "" {
		beamlog.LogLevel, beamlog.LogKind = "debug", "text"
		beamlog.SetupLoggingWithDefault()
	}
	os.Exit(ptest.MainRet(m))
}

var readAt = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// row builds an expected row in a line.
func row(start string, window time.Duration, revenue string, count, rev int64, st model.ResultState) model.Row {
	s := ms(start)
	return model.Row{WindowStart: s, WindowEnd: s + window.Milliseconds(), Dims: "{}", RevenueMicros: micros(revenue), EventCount: count, Revision: rev, State: st, Writer: "stream"}
}

func micros(s string) int64 {
	var units, frac int64
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, fracPart, _ := strings.Cut(s, ".")
	fmt.Sscan(intPart, &units)
	fracPart = (fracPart + "000000")[:6]
	fmt.Sscan(fracPart, &frac)
	v := units*1_000_000 + frac
	if neg {
		return -v
	}
	return v
}

func table(rows []model.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s %-10s %s n=%d rev=%d %s\n", model.FormatTime(r.WindowStart), r.Dims, model.FormatMicros(r.RevenueMicros), model.FormatTime(r.WindowEnd), r.EventCount, r.Revision, r.State)
	}
	return b.String()
}

func sortRows(rows []model.Row) {
	slices.SortFunc(rows, func(a, b model.Row) int {
		if a.WindowStart != b.WindowStart {
			return int(a.WindowStart - b.WindowStart)
		}
		if c := strings.Compare(a.Dims, b.Dims); c != 0 {
			return c
		}
		return int(a.Revision - b.Revision)
	})
}

func assertRows(t *testing.T, got, want []model.Row) {
	t.Helper()
	sortRows(got)
	sortRows(want)
	if !slices.Equal(got, want) {
		t.Errorf("rows differ\n got:\n%s want:\n%s", table(got), table(want))
	}
}

type result struct {
	rows        collect.Handle[model.Row]
	tooLate     collect.Handle[model.TooLate]
	conflicts   collect.Handle[model.Conflict]
	quarantined collect.Handle[model.Quarantined]
}

func run(t *testing.T, sc *scenario.Builder, o pipeline.Options) result {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	out, err := pipeline.Build(s, sc.Create(s), o)
	if err != nil {
		t.Fatal(err)
	}
	res := result{
		rows:        collect.Into[model.Row](s, out.Rows, "rows"),
		tooLate:     collect.Into[model.TooLate](s, out.TooLate, "toolate"),
		conflicts:   collect.Into[model.Conflict](s, out.Conflicts, "conflicts"),
		quarantined: collect.Into[model.Quarantined](s, out.Quarantined, "quarantined"),
	}
	if err := ptest.Run(p); err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	return res
}

func TestMinimalSequence(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p0", "B", "2026-11-04T10:20:00Z", "u2", "50").
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100.0"). // identical copy
		Purchase("p0", "X", "2026-11-04T11:20:00Z", "u3", "1").     // watermark -> 11:10
		AdvanceWatermark().
		Purchase("p0", "C", "2026-11-04T10:50:00Z", "u4", "20").  // late, within lateness
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "120"). // conflicting payload
		Purchase("p0", "Y", "2026-11-05T11:20:00Z", "u5", "2").   // watermark -> 11:10 next day
		AdvanceWatermark().
		Purchase("p0", "D", "2026-11-04T10:10:00Z", "u6", "7") // too late
	res := run(t, sc, o)

	assertRows(t, res.rows.Values(), []model.Row{
		row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 1, model.OnTime),
		row("2026-11-04T10:00:00Z", time.Hour, "170", 3, 2, model.Late),
		row("2026-11-04T10:00:00Z", time.Hour, "170", 3, 3, model.Final),
		row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 1, model.OnTime),
		row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 2, model.Final),
		row("2026-11-05T11:00:00Z", time.Hour, "2", 1, 1, model.OnTime),
		row("2026-11-05T11:00:00Z", time.Hour, "2", 1, 2, model.Final),
	})
	late := res.tooLate.Values()
	if len(late) != 1 || late[0].EventID != "D" || late[0].Position != "p0/events.jsonl:8" || late[0].Reason != model.ReasonWindowClosed {
		t.Errorf("too-late = %+v, want D at p0/events.jsonl:8", late)
	}
	conflicts := res.conflicts.Values()
	if len(conflicts) != 1 || conflicts[0].EventID != "A" || conflicts[0].Position != "p0/events.jsonl:6" {
		t.Errorf("conflicts = %+v, want A at p0/events.jsonl:6", conflicts)
	}
	if q := res.quarantined.Values(); len(q) != 0 {
		t.Errorf("quarantined = %+v, want none", q)
	}
}
