package live

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// MetricsContentType is the Prometheus text exposition format's (0.0.4).
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// promPrefix heads every metric name: the pipeline's metrics namespace.
const promPrefix = metrics.Namespace + "_"

// WriteMetrics writes the job's figures in the Prometheus text format, by its conventions (seconds,
// _total counters, parts as labels), every other counter as revenue_<name>_total; state is
// revenue_job_state, and !ok writes that alone.
func WriteMetrics(w io.Writer, state string, f Figures, ok bool, now time.Time) error {
	e := &exposition{}
	e.one("job_state", "gauge", "The job's state: 1 for the current one.", labels("state", state), 1)
	e.one("job_figures_available", "gauge", "1 once the runner reports the job's metrics.", "", b2f(ok))
	if ok {
		e.figures(f, now)
	}
	_, err := io.WriteString(w, e.b.String())
	return err
}

func (e *exposition) figures(f Figures, now time.Time) {
	c := f.Counts
	seen := map[string]bool{}
	counter := func(name, help string, v int64, counterName metrics.Name) {
		e.one(name, "counter", help, "", float64(v))
		seen[string(counterName)] = true
	}

	counter("records_read_total", "Records read from the source (SPEC §4: read = sum of records_judged_total).", c.Read, metrics.Read)
	e.family("records_judged_total", "counter", "Records by verdict: counted, duplicate, conflict, quarantined, too_late.")
	for _, t := range c.Terms() {
		// The label is the verdict in the singular: duplicate, conflict.
		e.sample("records_judged_total", labels("verdict", strings.TrimSuffix(t.Name, "s")), float64(t.Value))
		seen[t.Name] = true
	}
	e.labelled("partition_records_read_total", "counter", "Records read per source partition.", "partition", c.ReadBy)
	e.labelled("quarantined_records_total", "counter", "Quarantined records per reason.", "reason", c.QuarantinedBy)
	rows := map[string]int64{}
	for _, st := range model.ResultStates {
		rows[st.String()] = c.Rows[st.String()]
	}
	e.labelled("rows_emitted_total", "counter", "Snapshot rows the job emitted per result state.", "state", rows)
	counter("data_after_final_total", "Events that reached a window after its FINAL row (must stay 0).", c.AfterFinal, metrics.AfterFinal)

	e.histogram("event_lateness_seconds", "Event-time lateness of the valid events: how far behind its partition's largest event time an event arrived.",
		c.Lateness, f.Distributions[string(metrics.Ms(metrics.Lateness))])
	e.histogram("arrival_delay_seconds", "Arrival delay of the valid events: the time the source read it minus its event time.",
		c.Arrival, f.Distributions[string(metrics.Ms(metrics.Arrival))])

	e.partitions(f.Partitions, now)

	counter("sink_rows_accepted_total", "Snapshot rows the sink accepted (a higher revision).", c.SinkAccepted, metrics.SinkRowsAccepted)
	counter("sink_rows_stale_total", "Snapshot rows the sink refused as stale (a revision it already had or passed).", c.SinkStale, metrics.SinkRowsStale)
	counter("sink_audit_rows_inserted_total", "Audit rows (too late, conflicts, quarantine) the sink inserted.", c.SinkAudit, metrics.SinkAuditInserted)
	counter("sink_write_retries_total", "Sink writes retried after a failure.", c.SinkRetries, metrics.SinkRetries)

	for _, s := range []struct {
		name, help string
		counter    metrics.Name
	}{
		{"dedup_state_reloads_total", "Dedup shards read back from state (a cache miss).", metrics.DedupStateReloads},
		{"dedup_expired_total", "Ids dropped from the dedup state after --dedup-retention.", metrics.DedupExpired},
		{"dedup_cache_evictions_total", "Decoded dedup shards dropped from a process cache.", metrics.DedupCacheEvictions},
		{"revision_markers_expired_total", "Closed-window markers of the revision step cleared after the horizon.", metrics.RevisionMarkersExpired},
		{"revision_seed_rows_total", "Sink rows the revision step loaded when it started.", metrics.RevisionSeedRows},
		{"revisions_adopted_from_sink_total", "Keys whose restored state continued after a newer row the sink held.", metrics.RevisionsAdopted},
	} {
		counter(s.name, s.help, c.Counters[string(s.counter)], s.counter)
	}
	if d, ok := f.Distributions[string(metrics.DedupStateEntries)]; ok {
		e.family("dedup_state_entries", "summary", "Entries of a dedup shard's state each time one was read.")
		e.sample("dedup_state_entries_sum", "", float64(d.Sum))
		e.sample("dedup_state_entries_count", "", float64(d.Count))
		e.one("dedup_state_entries_max", "gauge", "The most entries a dedup shard's state held when read.", "", float64(d.Max))
	}

	idle := map[string]int64{}
	var rest []string
	for _, name := range slices.Sorted(maps.Keys(c.Counters)) {
		if p, ok := metrics.Of(metrics.IdleTransitions, name); ok {
			idle[p] = c.Counters[name]
		} else if !seen[name] && !metrics.Filed(name) {
			rest = append(rest, name)
		}
	}
	e.labelled("partition_idle_transitions_total", "counter", "Moves of a source partition to idle.", "partition", idle)
	for _, name := range rest {
		e.one(sanitize(name)+"_total", "counter", "The job's counter "+metrics.Namespace+"/"+name+".", "", float64(c.Counters[name]))
	}
}

func (e *exposition) partitions(ps []Partition, now time.Time) {
	e.family("partition_watermark_timestamp_seconds", "gauge", "A source partition's watermark (event time), since the epoch; absent before its first valid event.")
	for _, p := range ps {
		if p.WatermarkMs != model.NoWatermark {
			e.sample("partition_watermark_timestamp_seconds", labels("partition", p.Name), float64(p.WatermarkMs)/1000)
		}
	}
	e.family("partition_watermark_lag_seconds", "gauge", "How far a source partition's watermark trails the time of the scrape.")
	for _, p := range ps {
		if p.WatermarkMs != model.NoWatermark {
			e.sample("partition_watermark_lag_seconds", labels("partition", p.Name), float64(now.UnixMilli()-p.WatermarkMs)/1000)
		}
	}
	e.family("partition_idle", "gauge", "1 while a source partition is idle (out of the watermark's minimum), else 0.")
	for _, p := range ps {
		e.sample("partition_idle", labels("partition", p.Name), b2f(p.Idle))
	}
	if wm := pipelineWatermark(ps); wm != model.NoWatermark {
		e.one("watermark_timestamp_seconds", "gauge", "The pipeline's watermark: the minimum over the active partitions' (SPEC §2).", "", float64(wm)/1000)
		e.one("watermark_lag_seconds", "gauge", "How far the pipeline's watermark trails the time of the scrape.", "", float64(now.UnixMilli()-wm)/1000)
	}
}

// histogram writes h as a cumulative Prometheus histogram, le in seconds, the last +Inf.
func (e *exposition) histogram(name, help string, h delay.Histogram, d metrics.DistributionSum) {
	e.family(name, "histogram", help+" Buckets from the job's delay counters (ms resolution).")
	var cum int64
	for _, b := range h.Buckets {
		cum += b.Count
		le := "+Inf"
		if b.Upper != delay.Unbounded {
			le = formatFloat(float64(b.Upper) / 1000)
		}
		e.sample(name+"_bucket", labels("le", le), float64(cum))
	}
	e.sample(name+"_sum", "", float64(d.Sum)/1000)
	e.sample(name+"_count", "", float64(h.Total))
}

// exposition builds the text format.
type exposition struct{ b strings.Builder }

func (e *exposition) family(name, typ, help string) {
	fmt.Fprintf(&e.b, "# HELP %s%s %s\n# TYPE %s%s %s\n", promPrefix, name, escapeHelp(help), promPrefix, name, typ)
}

func (e *exposition) sample(name, labels string, v float64) {
	fmt.Fprintf(&e.b, "%s%s%s %s\n", promPrefix, name, labels, formatFloat(v))
}

// one writes a family of one sample.
func (e *exposition) one(name, typ, help, labels string, v float64) {
	e.family(name, typ, help)
	e.sample(name, labels, v)
}

// labelled writes a family with one sample per key of m, in key order.
func (e *exposition) labelled(name, typ, help, label string, m map[string]int64) {
	e.family(name, typ, help)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.sample(name, labels(label, k), float64(m[k]))
	}
}

func labels(name, value string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	return "{" + name + `="` + r.Replace(value) + `"}`
}

func escapeHelp(s string) string { return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s) }

// sanitize makes a counter's name a valid metric name ([a-zA-Z0-9_:]).
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

// formatFloat spells v as the text format does (strconv writes +Inf, -Inf and NaN so too).
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
