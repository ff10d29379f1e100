package live

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/promtext"
)

// knownFigures: 10 read = 5 counted + 2 duplicates + 1 conflict + 1
// quarantined + 1 too late, two partitions (p1 idle), delays in three
// buckets.
func knownFigures() Figures {
	named := map[string]int64{
		"read": 10, "counted": 5, "duplicates": 2, "conflicts": 1, "quarantined": 1, "too_late": 1,
		"read_partition_p0": 6, "read_partition_p1": 4, "quarantined_bad_json": 1,
		"rows_EARLY": 3, "rows_FINAL": 1, "sink_rows_accepted": 4, "sink_rows_stale": 1, "sink_audit_inserted": 3,
		"dedup_state_reloads": 2, "idle_transitions_p1": 1, "pubsub_pulled": 0,
		string(metrics.Bucket(metrics.Lateness, 0)): 4, string(metrics.Bucket(metrics.Lateness, 2)): 3,
		string(metrics.Bucket(metrics.Lateness, len(delay.Buckets)-1)): 1,
	}
	return Figures{
		Counts: metrics.CountsOf(named),
		Partitions: []Partition{
			{Name: "p0", WatermarkMs: 1_000_000, Read: 6},
			{Name: "p1", WatermarkMs: 900_000, Idle: true, Read: 4},
			{Name: "p2", WatermarkMs: model.NoWatermark},
		},
		Distributions: map[string]metrics.DistributionSum{
			"event_lateness_ms":   {Count: 8, Sum: 90_000_000, Min: 0, Max: 90_000_000},
			"dedup_state_entries": {Count: 3, Sum: 12, Min: 2, Max: 6},
		},
	}
}

func TestWriteMetrics(t *testing.T) {
	var b strings.Builder
	if err := WriteMetrics(&b, "RUNNING", knownFigures(), true, time.UnixMilli(1_010_500)); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	e, err := promtext.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	for _, want := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"revenue_job_state", []string{"state", "RUNNING"}, 1},
		{"revenue_job_figures_available", nil, 1},
		{"revenue_records_read_total", nil, 10},
		{"revenue_records_judged_total", []string{"verdict", "counted"}, 5},
		{"revenue_records_judged_total", []string{"verdict", "duplicate"}, 2},
		{"revenue_records_judged_total", []string{"verdict", "conflict"}, 1},
		{"revenue_records_judged_total", []string{"verdict", "quarantined"}, 1},
		{"revenue_records_judged_total", []string{"verdict", "too_late"}, 1},
		{"revenue_partition_records_read_total", []string{"partition", "p1"}, 4},
		{"revenue_quarantined_records_total", []string{"reason", "bad_json"}, 1},
		{"revenue_rows_emitted_total", []string{"state", "EARLY"}, 3},
		{"revenue_rows_emitted_total", []string{"state", "ON_TIME"}, 0},
		{"revenue_data_after_final_total", nil, 0},
		{"revenue_event_lateness_seconds_bucket", []string{"le", "60"}, 4},
		{"revenue_event_lateness_seconds_bucket", []string{"le", "300"}, 4},
		{"revenue_event_lateness_seconds_bucket", []string{"le", "600"}, 7},
		{"revenue_event_lateness_seconds_bucket", []string{"le", "86400"}, 7},
		{"revenue_event_lateness_seconds_bucket", []string{"le", "+Inf"}, 8},
		{"revenue_event_lateness_seconds_sum", nil, 90_000},
		{"revenue_event_lateness_seconds_count", nil, 8},
		{"revenue_arrival_delay_seconds_count", nil, 0},
		{"revenue_partition_watermark_timestamp_seconds", []string{"partition", "p0"}, 1000},
		{"revenue_partition_watermark_lag_seconds", []string{"partition", "p1"}, 110.5},
		{"revenue_partition_idle", []string{"partition", "p1"}, 1},
		{"revenue_partition_idle", []string{"partition", "p2"}, 0},
		{"revenue_watermark_timestamp_seconds", nil, 1000}, // p1 is idle: out of the minimum
		{"revenue_watermark_lag_seconds", nil, 10.5},
		{"revenue_sink_rows_accepted_total", nil, 4},
		{"revenue_sink_rows_stale_total", nil, 1},
		{"revenue_sink_audit_rows_inserted_total", nil, 3},
		{"revenue_dedup_state_reloads_total", nil, 2},
		{"revenue_dedup_state_entries_sum", nil, 12},
		{"revenue_dedup_state_entries_count", nil, 3},
		{"revenue_dedup_state_entries_max", nil, 6},
		{"revenue_partition_idle_transitions_total", []string{"partition", "p1"}, 1},
		{"revenue_pubsub_pulled_total", nil, 0},
	} {
		if got, ok := e.Value(want.name, want.labels...); !ok || got != want.value {
			t.Errorf("%s%v = %v (present %v), want %v", want.name, want.labels, got, ok, want.value)
		}
	}
	// p2 has no watermark yet: no sample; the families are counters and
	// gauges as named.
	if _, ok := e.Value("revenue_partition_watermark_timestamp_seconds", "partition", "p2"); ok {
		t.Error("p2 has a watermark sample before its first event")
	}
	for name, typ := range map[string]string{"revenue_records_read_total": "counter", "revenue_records_judged_total": "counter",
		"revenue_event_lateness_seconds": "histogram", "revenue_partition_watermark_lag_seconds": "gauge", "revenue_dedup_state_entries": "summary"} {
		if f := e[name]; f == nil || f.Type != typ {
			t.Errorf("family %s: %+v, want type %s", name, f, typ)
		}
	}
	// Every counter of the figures is exposed once: no bucket counter or
	// family member by its raw name.
	for _, raw := range []string{"revenue_read_partition_p0_total", "revenue_rows_EARLY_total", "revenue_idle_transitions_p1_total",
		"revenue_quarantined_bad_json_total", "revenue_event_lateness_0_1m_total"} {
		if strings.Contains(text, raw) {
			t.Errorf("exposition has %s", raw)
		}
	}

	// Before the runner reports anything: the state alone.
	b.Reset()
	if err := WriteMetrics(&b, "STARTING", Figures{}, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if e, err := promtext.Parse(strings.NewReader(b.String())); err != nil || len(e) != 2 {
		t.Errorf("no figures: %v, %d families\n%s", err, len(e), b.String())
	}
}

// The parser the tests rely on refuses what Prometheus would: the negative
// controls of TestWriteMetrics and the run's scrape.
func TestParseRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no type":         "x_total 1\n",
		"twice":           "# TYPE x_total counter\nx_total 1\nx_total 2\n",
		"bad value":       "# TYPE x gauge\nx one\n",
		"bad label":       "# TYPE x gauge\nx{a=b} 1\n",
		"not cumulative":  "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"count not +Inf":  "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
		"bad metric name": "# TYPE 1x gauge\n",
	} {
		if _, err := promtext.Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed %q", name, text)
		}
	}
}

// /metrics on the page's server, and alone on --metrics-addr's.
func TestMetricsEndpoint(t *testing.T) {
	m := &Monitor{Title: "t", Sink: sink.Spec{Scheme: sink.SchemeConsole}}
	m.Start(func(context.Context) (Figures, bool) { return knownFigures(), true })
	for name, h := range map[string]http.Handler{"page": m.Handler(), "metrics-addr": metricsOnly(m)} {
		srv := httptest.NewServer(h)
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if ct := resp.Header.Get("Content-Type"); ct != MetricsContentType {
			t.Errorf("%s: content type %q", name, ct)
		}
		e, err := promtext.Parse(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, body)
		}
		if v, _ := e.Value("revenue_records_read_total"); v != 10 {
			t.Errorf("%s: read %v, want 10", name, v)
		}
		if v, _ := e.Value("revenue_job_state", "state", "RUNNING"); v != 1 {
			t.Errorf("%s: no RUNNING state", name)
		}
	}
}
