package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	beammetrics "github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/collect"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/testing/runnertest"
	"github.com/revenue-stream/hourly/testing/scenario"
	"github.com/revenue-stream/hourly/transforms"
)

func TestMain(m *testing.M) {
	if os.Getenv("DEBUG_PRISM") != "" {
		beamlog.LogLevel, beamlog.LogKind = "debug", "text"
		beamlog.SetupLoggingWithDefault()
	}
	localrunner.UseSafeOptions("prism")
	os.Exit(ptest.MainRet(m))
}

var (
	ms    = rowtest.MS
	row   = rowtest.Row
	table = rowtest.Table
)

var readAt = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

type result struct {
	rows        collect.Handle[model.Row]
	tooLate     collect.Handle[model.TooLate]
	conflicts   collect.Handle[model.Conflict]
	quarantined collect.Handle[model.Quarantined]
	counts      metrics.Counts
	// dists are the revenue namespace's distributions, merged by name.
	dists map[string]beammetrics.DistributionValue
}

func run(t *testing.T, sc *scenario.Builder, o pipeline.Options) result {
	t.Helper()
	return runFrom(t, sc.Create, len(sc.Records), o)
}

// runFrom runs the pipeline over what create returns (n records).
func runFrom(t *testing.T, create func(beam.Scope) beam.PCollection, n int, o pipeline.Options) result {
	t.Helper()
	return runBuilt(t, func(s beam.Scope) (pipeline.Outputs, error) { return pipeline.Build(s, create(s), o) }, n)
}

// runBuilt runs the graph build makes (n records read).
func runBuilt(t *testing.T, build func(beam.Scope) (pipeline.Outputs, error), n int) result {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	out, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	res := result{
		rows:        collect.Into[model.Row](s, out.Rows, "rows"),
		tooLate:     collect.Into[model.TooLate](s, out.TooLate, "toolate"),
		conflicts:   collect.Into[model.Conflict](s, out.Conflicts, "conflicts"),
		quarantined: collect.Into[model.Quarantined](s, out.Quarantined, "quarantined"),
	}
	pr, err := runnertest.Run(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// Every run checks the conservation identity of SPEC §4.
	res.counts = collect.Counts(pr)
	res.dists = map[string]beammetrics.DistributionValue{}
	for _, d := range pr.Metrics().AllMetrics().Distributions() {
		if d.Namespace() != metrics.Namespace {
			continue
		}
		v, ok := res.dists[d.Name()]
		r := d.Result()
		if ok {
			r = beammetrics.DistributionValue{Count: v.Count + r.Count, Sum: v.Sum + r.Sum, Min: min(v.Min, r.Min), Max: max(v.Max, r.Max)}
		}
		res.dists[d.Name()] = r
	}
	if err := res.counts.Check(); err != nil {
		t.Errorf("%v", err)
	}
	if got := int64(n); res.counts.Read != got {
		t.Errorf("read counter = %d, want %d records", res.counts.Read, got)
	}
	return res
}

func TestMinimalSequence(t *testing.T) {
	t.Run("cached", func(t *testing.T) { testMinimalSequence(t, false, pipeline.OrderArrival) })
	// Without the process cache every batch reads the shard back from the
	// runner's state: what a runner that moves keys between workers (or a
	// retried bundle) sees. The duplicate and the conflict must still be
	// found, so the ids must be in the state, not only in the cache.
	t.Run("reloaded", func(t *testing.T) { testMinimalSequence(t, true, pipeline.OrderArrival) })
	// Held until the watermark and judged in position order, as off prism:
	// the same rows, audit rows and counts.
	t.Run("position order", func(t *testing.T) { testMinimalSequence(t, false, pipeline.OrderPosition) })
	t.Run("position order, reloaded", func(t *testing.T) { testMinimalSequence(t, true, pipeline.OrderPosition) })
	// C arrives when its partition's watermark (11:10) has passed its
	// window's end, but the dedup step takes it in with the windows'
	// announcements, before any of the shard's boundary timers exist: on
	// prism that is what a dedup step behind its source sees. C is still
	// LATE (CI on 5cb2bdc counted it ON_TIME).
	for _, order := range []string{pipeline.OrderArrival, pipeline.OrderPosition} {
		t.Run(order+", dedup behind", func(t *testing.T) { testMinimalSequenceLagging(t, order) })
	}
}

func testMinimalSequenceLagging(t *testing.T, order string) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.DedupOrder = order
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p0", "B", "2026-11-04T10:20:00Z", "u2", "50").
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100.0").
		Purchase("p0", "X", "2026-11-04T11:20:00Z", "u3", "1").
		Purchase("p0", "C", "2026-11-04T10:50:00Z", "u4", "20").
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "120").
		Purchase("p0", "Y", "2026-11-05T11:20:00Z", "u5", "2").
		AdvanceWatermark().
		Purchase("p0", "D", "2026-11-04T10:10:00Z", "u6", "7")
	res := run(t, sc, o)
	rowtest.AssertRowSet(t, "rows", res.rows.Values(), rowtest.MinimalChangelog())
	if late := res.tooLate.Values(); len(late) != 1 || late[0].EventID != "D" {
		t.Errorf("too-late = %+v, want D", late)
	}
	if c := res.conflicts.Values(); len(c) != 1 || c[0].EventID != "A" {
		t.Errorf("conflicts = %+v, want A", c)
	}
}

func testMinimalSequence(t *testing.T, noCache bool, order string) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.NoDedupCache = noCache
	o.DedupOrder = order
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

	rowtest.AssertRowSet(t, "rows", res.rows.Values(), rowtest.MinimalChangelog())
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
	if got, wantAtLeast := res.counts.Counters["dedup_state_reloads"], int64(5); noCache && got < wantAtLeast {
		t.Errorf("dedup_state_reloads = %d, want every batch and timer to reload (at least %d)", got, wantAtLeast)
	}
}

// Spark's watermark demo (SPEC §7, seed 000): window 5 m, bound 10 m,
// lateness 0, one partition. Spark drops 07:40 silently; we audit it.
func TestSparkWatermarkDemo(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Window = 5 * time.Minute
	o.Triggers.AllowedLateness = 0
	o.Triggers.Early = 0
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "e1", "2026-11-04T08:01:10Z", "u1", "1").
		Purchase("p0", "e2", "2026-11-04T08:01:40Z", "u2", "1").
		AdvanceWatermark()
	if w := sc.Watermark(); w != ms("2026-11-04T07:51:40Z") {
		t.Fatalf("watermark = %s, want 07:51:40", model.FormatTime(w))
	}
	sc.Purchase("p0", "e3", "2026-11-04T07:58:00Z", "u3", "1").
		Purchase("p0", "e4", "2026-11-04T07:40:00Z", "u4", "1")
	res := run(t, sc, o)
	w := 5 * time.Minute
	rowtest.AssertRowSet(t, "rows", res.rows.Values(), []model.Row{
		row("2026-11-04T07:55:00Z", w, "1", 1, 1, model.OnTime),
		row("2026-11-04T07:55:00Z", w, "1", 1, 2, model.Final),
		row("2026-11-04T08:00:00Z", w, "2", 2, 1, model.OnTime),
		row("2026-11-04T08:00:00Z", w, "2", 2, 2, model.Final),
	})
	late := res.tooLate.Values()
	if len(late) != 1 || late[0].EventID != "e4" || late[0].EventTime != ms("2026-11-04T07:40:00Z") {
		t.Fatalf("too-late = %+v, want e4 at 07:40", late)
	}
	if res.counts.TooLate != 1 || res.counts.Counted != 3 {
		t.Errorf("counts %v", res.counts)
	}
}

// EARLY rows on processing time: each a complete snapshot, only when it
// changed, never after ON_TIME.
func TestEarlyFirings(t *testing.T) {
	res := run(t, earlyScenario(scenario.New(pipeline.Defaults().Watermark, pipeline.Defaults().Event, readAt)), pipeline.Defaults())
	rowtest.AssertRowSet(t, "rows", res.rows.Values(), earlyRows())
}

// The same EARLY rows when ticks drive them instead of processing-time
// timers (--early-source=impulse, for the portable Flink runner): a tick
// element stands where the processing-time advance was.
func TestEarlyFiringsFromTicks(t *testing.T) {
	o := pipeline.Defaults()
	rec := &tickRecorder{cfg: teststream.NewConfig(), wm: int64(mtime.MinTimestamp)}
	earlyScenario(rec)
	if err := rec.cfg.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}
	res := runBuilt(t, func(s beam.Scope) (pipeline.Outputs, error) {
		records, ticks := beam.ParDo2(s, splitTicks, teststream.Create(s, rec.cfg))
		return pipeline.BuildWithTicks(s, scenario.DecodeRecords(s, records), ticks, o)
	}, len(rec.sc.Records))
	rowtest.AssertRowSet(t, "rows", res.rows.Values(), earlyRows())
}

// earlySteps is what the EARLY scenario needs of a builder.
type earlySteps[B any] interface {
	Purchase(partition, id, eventTime, user, amount string, extra ...string) B
	AdvanceWatermark() B
	AdvanceProcessingTime(d time.Duration) B
}

func earlyScenario[B earlySteps[B]](b B) B {
	// Prism schedules a stateful stage of a TestStream pipeline only when its
	// watermark moves, so each step advances it (as a source would).
	return b.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		AdvanceWatermark().
		AdvanceProcessingTime(2*time.Minute).
		Purchase("p0", "B", "2026-11-04T10:20:00Z", "u2", "50").
		AdvanceWatermark().
		AdvanceProcessingTime(2*time.Minute).
		AdvanceProcessingTime(2*time.Minute). // nothing changed: no row
		Purchase("p0", "X", "2026-11-04T11:20:00Z", "u3", "1").
		AdvanceWatermark().
		AdvanceProcessingTime(2 * time.Minute)
}

// tickRecorder builds a TestStream of records and ticks (empty elements)
// from a scenario's steps: a processing-time advance becomes a tick.
type tickRecorder struct {
	sc  *scenario.Builder
	cfg teststream.Config
	wm  int64
}

func (r *tickRecorder) builder() *scenario.Builder {
	if r.sc == nil {
		o := pipeline.Defaults()
		r.sc = scenario.New(o.Watermark, o.Event, readAt)
	}
	return r.sc
}

func (r *tickRecorder) Purchase(partition, id, eventTime, user, amount string, extra ...string) *tickRecorder {
	sc := r.builder().Purchase(partition, id, eventTime, user, amount, extra...)
	rec := sc.Records[len(sc.Records)-1]
	if err := r.cfg.AddElements(max(rec.WatermarkBefore, int64(mtime.MinTimestamp)), coders.EncodeRecord(rec)); err != nil {
		panic(err)
	}
	return r
}

func (r *tickRecorder) AdvanceWatermark() *tickRecorder {
	if w := r.builder().AdvanceWatermark().Watermark(); w > r.wm {
		r.wm = w
		if err := r.cfg.AdvanceWatermark(w); err != nil {
			panic(err)
		}
	}
	return r
}

func (r *tickRecorder) AdvanceProcessingTime(time.Duration) *tickRecorder {
	if err := r.cfg.AddElements(r.wm, []byte{}); err != nil {
		panic(err)
	}
	r.wm++ // as the scenario nudges it: prism then schedules the step
	if err := r.cfg.AdvanceWatermark(r.wm); err != nil {
		panic(err)
	}
	return r
}

func init() { register.Function3x0(splitTicks) }

// splitTicks separates the ticks (empty) from the encoded records.
func splitTicks(b []byte, records, ticks func([]byte)) {
	if len(b) == 0 {
		ticks(b)
	} else {
		records(b)
	}
}

func earlyRows() []model.Row {
	return []model.Row{
		row("2026-11-04T10:00:00Z", time.Hour, "100", 1, 1, model.Early),
		row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 2, model.Early),
		row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 3, model.OnTime),
		row("2026-11-04T10:00:00Z", time.Hour, "150", 2, 4, model.Final),
		row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 1, model.Early),
		row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 2, model.OnTime),
		row("2026-11-04T11:00:00Z", time.Hour, "1", 1, 3, model.Final),
	}
}

// Every quarantine class of SPEC §3 gets its row, and nothing else happens.
func TestQuarantineEveryReason(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.Event.MaxLine = 300
	o.Event.MaxAge = 48 * time.Hour
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "ok", "2026-12-31T10:00:00Z", "u", "1") // sets the partition watermark for too_old
	cases := []struct{ line, reason string }{
		{`{"event_id":"a"`, model.ReasonMalformedJSON},
		{`[1,2]`, model.ReasonNotAnObject},
		{`{"event_id":"a","event_time":"2026-12-31T10:00:00Z","user_id":"u"}`, model.ReasonMissingField},
		{`{"event_id":"","event_time":"2026-12-31T10:00:00Z","user_id":"u","amount":"1"}`, model.ReasonBadEventID},
		{`{"event_id":"a","event_time":"2026-12-31T10:00:00Z","user_id":7,"amount":"1"}`, model.ReasonBadUserID},
		{`{"event_id":"a","event_time":"2026-12-31T10:00:00Z","user_id":"u","amount":"1.0000001"}`, model.ReasonBadAmount},
		{`{"event_id":"a","event_time":"yesterday","user_id":"u","amount":"1"}`, model.ReasonBadEventTime},
		{`{"event_id":"a","event_time":"2027-01-01T00:10:00.001Z","user_id":"u","amount":"1"}`, model.ReasonFutureEventTime},
		{`{"event_id":"a","event_time":"2026-12-29T09:49:59Z","user_id":"u","amount":"1"}`, model.ReasonTooOld},
		{`{"event_id":"a","event_time":"2026-12-31T10:00:00Z","user_id":"u","amount":"1","pad":"` + strings.Repeat("x", 300) + `"}`, model.ReasonOversized},
	}
	for _, c := range cases {
		sc.Line("p0", c.line)
	}
	res := run(t, sc, o)
	got := map[string]string{}
	for _, q := range res.quarantined.Values() {
		got[q.Position] = q.Reason
	}
	for i, c := range cases {
		pos := fmt.Sprintf("p0/events.jsonl:%d", i+2)
		if got[pos] != c.reason {
			t.Errorf("%s (%s): quarantined as %q, want %q", pos, c.line[:min(len(c.line), 60)], got[pos], c.reason)
		}
		if res.counts.QuarantinedBy[c.reason] != 1 {
			t.Errorf("counter quarantined_%s = %d, want 1", c.reason, res.counts.QuarantinedBy[c.reason])
		}
	}
	if len(got) != len(cases) || res.counts.Counted != 1 {
		t.Errorf("quarantined %d records and counted %d, want %d and 1", len(got), res.counts.Counted, len(cases))
	}
}

// Dedup state is released once each id's retention has passed: a shard
// forgets a window's ids when a batch brings the news that the watermark
// passed their expiry (the watermark gate stamps it on the events; the
// shards carry no timers). A and B's window [10:00, 11:00) expires at
// 11:00 + 30 h = 2026-11-05T17:00; C, on the same shard, comes after p0's
// watermark passed it.
func TestDedupRetentionExpiry(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.DedupRetention = 30 * time.Hour
	shards := o.WithDefaults().DedupShards
	onShardOf := func(prefix, of string) string {
		for i := range 1000 {
			if id := fmt.Sprintf("%s-%d", prefix, i); transforms.ShardOf(id, shards) == transforms.ShardOf(of, shards) {
				return id
			}
		}
		t.Fatalf("no id with prefix %q on the shard of %q", prefix, of)
		return ""
	}
	b, c := onShardOf("B", "A"), onShardOf("C", "A")
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p0", b, "2026-11-04T10:20:00Z", "u2", "50").
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p0", "D", "2026-11-05T17:30:00Z", "u3", "1").
		AdvanceWatermark().
		Purchase("p0", c, "2026-11-05T17:40:00Z", "u4", "2")
	res := run(t, sc, o)
	if got := res.counts.Counters["dedup_expired"]; got != 2 {
		t.Errorf("dedup_expired = %d, want 2 (A and %s released before %s was judged)", got, b, c)
	}
	if res.counts.Duplicates != 1 || res.counts.Counted != 4 {
		t.Errorf("duplicates = %d, counted %d; want 1 and 4", res.counts.Duplicates, res.counts.Counted)
	}
}

// Every valid event's delays are counted into the delay buckets, and the
// percentiles come back exactly from the bucket counters. Event lateness is
// measured against the largest event time the partition had shown before
// the event (bound 10m: WatermarkBefore + 10m); arrival delay is the read
// time (12:00) minus the event time.
func TestDelayMetrics(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	sc := scenario.New(o.Watermark, o.Event, time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC))
	for _, e := range []struct{ id, at string }{ // lateness, arrival
		{"A", "2026-11-04T11:59:30Z"}, // 0 (first), 30s
		{"B", "2026-11-04T11:58:00Z"}, // 1m30s, 2m
		{"C", "2026-11-04T11:52:00Z"}, // 7m30s, 8m
		{"D", "2026-11-04T11:30:00Z"}, // 29m30s, 30m
		{"E", "2026-11-04T11:00:00Z"}, // 59m30s, 1h
		{"F", "2026-11-04T08:00:00Z"}, // 3h59m30s, 4h
		{"G", "2026-11-03T20:00:00Z"}, // 15h59m30s, 16h
		{"K", "2026-11-03T13:00:00Z"}, // 22h59m30s, 23h
		{"H", "2026-11-02T12:00:00Z"}, // 47h59m30s, 48h (too late: still measured)
		{"", ""},                      // a malformed line: quarantined, not measured
		{"A", "2026-11-04T11:59:30Z"}, // 0, 30s (a duplicate is a valid event)
	} {
		if e.id == "" {
			sc.Line("p0", `{"event_id":`)
			continue
		}
		sc.Purchase("p0", e.id, e.at, "u", "1")
	}
	for i := range 10 { // in order: 0, and 55s, 50s, ... 10s
		sc.Purchase("p1", fmt.Sprintf("P%d", i), fmt.Sprintf("2026-11-04T11:59:%02dZ", 5+5*i), "u", "1")
	}
	res := run(t, sc, o)

	if got, want := res.counts.Lateness.Counts(), []int64{12, 1, 1, 1, 1, 1, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("event_lateness buckets = %v, want %v", got, want)
	}
	if got, want := res.counts.Arrival.Counts(), []int64{12, 1, 1, 0, 1, 2, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("arrival_delay buckets = %v, want %v", got, want)
	}
	if c := res.counts.Counters; c["event_lateness_6h_24h"] != 2 || c["arrival_delay_1h_6h"] != 2 || c["arrival_delay_10m_30m"] != 0 {
		t.Errorf("counters event_lateness_6h_24h %d, arrival_delay_1h_6h %d, arrival_delay_10m_30m %d; want 2, 2, 0",
			c["event_lateness_6h_24h"], c["arrival_delay_1h_6h"], c["arrival_delay_10m_30m"])
	}
	// 20 valid events: nearest ranks 10, 19 and 20.
	day := 24 * time.Hour.Milliseconds()
	for _, h := range []struct {
		name string
		got  delay.Histogram
	}{{"event_lateness", res.counts.Lateness}, {"arrival_delay", res.counts.Arrival}} {
		if g := h.got; g.Total != 20 || g.P50 != time.Minute.Milliseconds() || g.P95 != day || g.P99 != delay.Unbounded {
			t.Errorf("%s: total %d, p50 %d, p95 %d, p99 %d; want 20, <1m, <24h, >=24h", h.name, g.Total, g.P50, g.P95, g.P99)
		}
		if got, want := h.got.Percentiles(), "p50 <1m, p95 <24h, p99 >=24h"; got != want {
			t.Errorf("%s: %q, want %q", h.name, got, want)
		}
	}
	// The distributions carry what the buckets cannot: exact sums and bounds.
	if got, want := res.dists["event_lateness_ms"], (beammetrics.DistributionValue{Count: 20, Sum: 333_360_000, Min: 0, Max: 172_770_000}); got != want {
		t.Errorf("event_lateness_ms = %+v, want %+v", got, want)
	}
	if got, want := res.dists["arrival_delay_ms"], (beammetrics.DistributionValue{Count: 20, Sum: 333_985_000, Min: 10_000, Max: 172_800_000}); got != want {
		t.Errorf("arrival_delay_ms = %+v, want %+v", got, want)
	}
	if res.counts.Quarantined != 1 || res.counts.TooLate != 1 || res.counts.Duplicates != 1 {
		t.Errorf("quarantined %d, too_late %d, duplicates %d; want 1 each", res.counts.Quarantined, res.counts.TooLate, res.counts.Duplicates)
	}
}

// The revision step's closed markers go after the horizon (window +
// lateness after the close); a record for the window that arrives after
// that is still too late (the dedup gate), and no row changes.
func TestRevisionMarkersExpire(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p1", "B", "2026-11-04T11:15:00Z", "u2", "50").
		Purchase("p0", "X", "2026-11-06T13:00:00Z", "u3", "1"). // p0 past A's marker horizon (2026-11-06T12:00)
		Purchase("p1", "Y", "2026-11-06T13:00:00Z", "u3", "2").
		AdvanceWatermark().
		Purchase("p1", "C", "2026-11-04T10:40:00Z", "u4", "9") // window 10:00, long closed
	res := run(t, sc, o)
	if got := res.counts.Counters["revision_markers_expired"]; got != 3 {
		t.Errorf("revision_markers_expired = %d, want 3 (every window's marker)", got)
	}
	if res.counts.TooLate != 1 || res.counts.Counted != 4 {
		t.Errorf("too_late = %d, counted = %d; want 1 and 4", res.counts.TooLate, res.counts.Counted)
	}
	for _, r := range res.rows.Values() {
		if r.WindowStart == ms("2026-11-04T10:00:00Z") && r.EventCount != 1 {
			t.Errorf("window 10:00 changed after its marker expired: %+v", r)
		}
	}
}

// Of two copies of an id from one partition, the earlier one counts however
// they are delivered (--dedup-order=position): the TestStream hands them
// over in source order, then in reverse. Same timestamps (the partition
// watermark did not move between them), so only the order differs.
func TestDeterministicFirstCopyInPartition(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "X", "2026-11-04T10:20:00Z", "u1", "1").
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u2", "100"). // line 2: counts
		Purchase("p0", "A", "2026-11-04T10:15:00Z", "u2", "120")  // line 3: conflict
	recs := sc.Records
	swapped := []model.Record{recs[0], recs[2], recs[1]}
	firstFP := fingerprintOf(t, recs[1])
	for _, tc := range []struct {
		name    string
		recs    []model.Record
		order   string
		revenue int64
	}{
		{"source order", recs, pipeline.OrderPosition, 101_000_000},
		{"reversed", swapped, pipeline.OrderPosition, 101_000_000},
		// (An arrival-order control, where the later copy would count, is not
		// asserted: which order prism hands a key's elements to the dedup
		// step in depends on its bundling and on the window announcements
		// (AnnounceWindows). That dependence is what position order removes.)
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			o.DedupOrder = tc.order
			res := runFrom(t, func(s beam.Scope) beam.PCollection { return createInOrder(s, tc.recs) }, len(tc.recs), o)
			rows := res.rows.Values()
			final := rows[0]
			for _, r := range rows {
				if r.Revision > final.Revision {
					final = r
				}
			}
			if final.RevenueMicros != tc.revenue || final.EventCount != 2 {
				t.Errorf("final row %+v, want revenue %d from 2 events", final, tc.revenue)
			}
			c := res.conflicts.Values()
			if len(c) != 1 || c[0].Position != "p0/events.jsonl:3" || c[0].FirstFingerprint != firstFP {
				t.Errorf("conflicts = %+v, want line 3 naming line 2's fingerprint %x", c, firstFP)
			}
		})
	}
}

// createInOrder feeds records to a TestStream in the given order, stamped as
// the scenario stamps them.
func createInOrder(s beam.Scope, recs []model.Record) beam.PCollection {
	cfg := teststream.NewConfig()
	for _, r := range recs {
		if err := cfg.AddElements(max(r.WatermarkBefore, int64(mtime.MinTimestamp)), coders.EncodeRecord(r)); err != nil {
			panic(err)
		}
	}
	if err := cfg.AdvanceWatermarkToInfinity(); err != nil {
		panic(err)
	}
	return scenario.DecodeRecords(s, teststream.Create(s, cfg))
}

func fingerprintOf(t *testing.T, r model.Record) uint64 {
	t.Helper()
	ev, q := event.Parse(r, event.DefaultConfig())
	if q != nil {
		t.Fatalf("record %s does not parse: %+v", r.Position, q)
	}
	return ev.Fingerprint
}

// TestAuditPayloadsFromRawLog runs a scenario whose records name their
// place in a raw log, as a file source's do: events enter the dedup step
// without their payload, and the audit rows still carry theirs exactly
// (the conflict's read back from the raw log; the quarantined and the
// too-late record's from before the dedup step). Negative control: the
// same run with the conflicting line changed in the file after it was read
// fails instead of writing a payload that is not the record's, which shows
// that the payload came from the file.
func TestAuditPayloadsFromRawLog(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	build := func(dir string) *scenario.Builder {
		return scenario.New(o.Watermark, o.Event, readAt).RawLog(dir).
			Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
			Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100.0"). // identical copy
			Line("p0", `{"event_id":"broken",`).
			Purchase("p0", "X", "2026-11-04T11:20:00Z", "u3", "1").
			AdvanceWatermark().
			Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "120"). // conflicting payload
			Purchase("p0", "Y", "2026-11-05T11:20:00Z", "u5", "2").
			AdvanceWatermark().
			Purchase("p0", "D", "2026-11-04T10:10:00Z", "u6", "7") // too late
	}
	sc := build(t.TempDir())
	line := func(pos string) string {
		for _, r := range sc.Records {
			if r.Position == pos {
				if r.Ref.IsZero() {
					t.Fatalf("%s has no place in the raw log", pos)
				}
				return string(r.Line)
			}
		}
		t.Fatalf("no record at %s", pos)
		return ""
	}
	res := run(t, sc, o)
	if c := res.conflicts.Values(); len(c) != 1 || c[0].Position != "p0/events.jsonl:5" || string(c[0].Payload) != line("p0/events.jsonl:5") {
		t.Errorf("conflicts = %+v, want line 5 with its payload %q", c, line("p0/events.jsonl:5"))
	}
	if l := res.tooLate.Values(); len(l) != 1 || l[0].Position != "p0/events.jsonl:7" || string(l[0].Payload) != line("p0/events.jsonl:7") {
		t.Errorf("too late = %+v, want line 7 with its payload %q", l, line("p0/events.jsonl:7"))
	}
	if q := res.quarantined.Values(); len(q) != 1 || q[0].Position != "p0/events.jsonl:3" || string(q[0].Payload) != line("p0/events.jsonl:3") {
		t.Errorf("quarantined = %+v, want line 3 with its payload %q", q, line("p0/events.jsonl:3"))
	}

	// The negative control: the conflicting line's user changed in the file
	// (same length) after the records were read.
	dir := t.TempDir()
	changed := build(dir)
	path := filepath.Join(dir, "p0", "events.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conflicting := rowtest.Purchase("A", "2026-11-04T10:15:00Z", "u1", "120")
	if !strings.Contains(string(b), conflicting) {
		t.Fatalf("%s does not hold %s", path, conflicting)
	}
	b = []byte(strings.Replace(string(b), conflicting, rowtest.Purchase("A", "2026-11-04T10:15:00Z", "u2", "120"), 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	if _, err := pipeline.Build(s, changed.Create(s), o); err != nil {
		t.Fatal(err)
	}
	if _, err := runnertest.Run(p); err == nil || !strings.Contains(err.Error(), "no longer the record judged") {
		t.Errorf("a raw-log line changed under the job: error %v, want the payload refused", err)
	}
}
