package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/jsonl"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/transforms"
)

// summarise fills the summary from the job's outcome and the sink's counts, checks conservation,
// seals the resume points, prints the summary and writes the report. With --ui and a person at
// the terminal, the page stays up until Ctrl-C (ctx).
func (r *jobRun) summarise(ctx context.Context, res outcome, planned bool, out io.Writer) (*Summary, error) {
	sum := r.sum
	sum.Duration = time.Since(sum.Started)
	if r.readAhead != "" {
		ra := flow.ReadAheadOf(r.readAhead)
		sum.ReadAhead = &ReadAheadFigures{Budget: r.fo.ReadAheadRecords, Peak: ra.Peak(), PastBudget: ra.PastBudget()}
	}
	sum.JobID, sum.Interrupted = res.jobID, res.interrupted
	if *jobopts.Async && res.err == nil {
		fmt.Fprintf(out, "job %s submitted (--async): the launcher does not wait for it, so there is no summary and no resume point is sealed\n", res.jobID)
		return sum, nil
	}
	if res.detached != "" {
		return sum, errors.New(res.detached)
	}
	if res.metrics != nil {
		sum.Counts = res.metrics.Counts
	}
	switch {
	case errors.Is(res.err, errCancelledOutside):
		sum.State, sum.Error = StateCancelled, cli.OneLine(res.err)
	case res.err != nil:
		sum.State, sum.Error = StateFailed, cli.OneLine(res.err)
	case res.interrupted && planned:
		sum.State, sum.Planned = StateDone, true
	case res.interrupted:
		sum.State = StateCancelled
	default:
		sum.State = StateDone
	}
	if r.mon != nil {
		r.mon.SetState(sum.State)
	}
	// Release the loopback workers' handles (Teardown is not promised) before reading the sink.
	bg := context.WithoutCancel(ctx)
	if err := sink.CloseShared(); err != nil {
		slog.Warn("closing the sink after the job", "err", err)
	}
	view, viewErr := readSink(bg, r.o.Sink)
	if viewErr != nil {
		slog.Error("reading the sink back", "sink", sum.Sink, "err", viewErr)
	}
	sum.view = view

	check := sum.Counts.Check()
	sum.Conserved, sum.Identity = check == nil, sum.Counts.Identity()
	if res.metrics == nil {
		check = errors.New("the job reported no metrics: the conservation identity cannot be checked")
		sum.Conserved, sum.unchecked = false, true
	}
	if check != nil && res.err == nil {
		slog.Error("conservation check failed", "err", check)
	}
	if r.seal != nil {
		if err := r.seal.final(bg, res.unproven(sum)); err != nil {
			slog.Warn("sealing the run's resume points; a restart re-reads from the previous ones", "err", err)
		}
	}
	if err := sum.WriteText(out); err != nil {
		slog.Error("printing the summary", "err", err)
	}
	if r.o.Report != "" {
		if err := writeReport(r.o.Report, sum, r.po); err != nil {
			slog.Error("writing the run report", "err", err)
		} else {
			slog.Info("run report written", "path", r.o.Report)
		}
	}
	if r.uiURL != "" && ctx.Err() == nil && keepPage() {
		slog.Info("the job has ended; the live page stays up until Ctrl-C", "url", r.uiURL, "state", sum.State)
		<-ctx.Done()
	}
	return sum, errors.Join(res.err, check, viewErr)
}

// Job states a Summary reports.
const (
	StateDone      = "DONE"
	StateCancelled = "CANCELLED"
	StateFailed    = "FAILED"
)

// Summary is what a run did: its settings, the job's figures and what the sink holds afterwards.
type Summary struct {
	Source, Sink, Runner, JobID string
	Demo                        bool
	// Follow: read as a stream (Archive is a Pub/Sub source's archive).
	Follow  bool
	Archive string
	// State is DONE (also at --duration: Planned), CANCELLED (a graceful stop, or a cancel outside
	// the launcher: Error) or FAILED.
	State                string
	Interrupted, Planned bool
	Started              time.Time
	Duration             time.Duration
	// Settings are the effective settings, as flags would spell them.
	Settings map[string]string
	Counts   metrics.Counts
	// Conserved says the conservation identity held; Identity spells it out.
	Conserved       bool
	Identity, Error string
	// ReadAhead is the embedded runner's read-ahead bound and peak (nil: none).
	ReadAhead *ReadAheadFigures

	view sinkView
	// unchecked: no counters reported; Conserved is false without a violation.
	unchecked bool
}

// ReadAheadFigures are a run's read-ahead bound and peak, in records, and the source calls that
// read past it for the watermark to move (flow.ReadAhead).
type ReadAheadFigures struct {
	Budget           int
	Peak, PastBudget int64
}

// latestRows is how many of the latest hourly rows the summary shows.
const latestRows = 12

// WriteText prints the summary as aligned text.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	what := "replay of " + s.Source
	switch {
	case s.Archive != "":
		what = "stream of " + s.Source + " (archive " + s.Archive + ")"
	case s.Follow:
		what = "follow of " + s.Source
	}
	if s.Demo {
		what = "demo: " + what
	}
	fmt.Fprintf(&b, "\n%s -> %s on %s: %s in %s", what, s.Sink, s.Runner, s.State, s.Duration.Round(100*time.Millisecond))
	switch {
	case s.Interrupted && s.Planned:
		b.WriteString(" (stopped as planned by --duration: readers stopped, the job was cancelled; no window was made FINAL early)")
	case s.Interrupted:
		b.WriteString(" (interrupted: readers stopped, the job was cancelled; no window was made FINAL early)")
	}
	b.WriteString("\n")
	if s.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", s.Error)
	}

	c := s.Counts
	width := len(strconv.FormatInt(c.Read, 10))
	line := func(name string, v int64, detail string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-12s %*d  %s", name, width, v, detail), " ") + "\n")
	}
	b.WriteString("\nrecords\n")
	line("read", c.Read, breakdown(c.ReadBy, "partition "))
	detail := map[string]string{string(metrics.Quarantined): breakdown(c.QuarantinedBy, "")}
	if c.ReplayedIntoFinal > 0 {
		detail[string(metrics.Counted)] = fmt.Sprintf("%d of them replayed into windows the sink holds as FINAL, which stay (replayed_into_final)", c.ReplayedIntoFinal)
	}
	for _, t := range c.Terms() {
		line(t.Name, t.Value, detail[t.Name])
	}
	verdict := "holds"
	switch {
	case s.unchecked:
		verdict = "NOT CHECKED: the runner reported no counters"
	case !s.Conserved:
		verdict = "VIOLATED"
	}
	fmt.Fprintf(&b, "conservation: %s: %s\n", s.Identity, verdict)
	if c.Read > 0 {
		fmt.Fprintf(&b, "dedup step: took in %d batches, %.1f per 1,000 records read (one per shard and partition a source bundle touches); %d windows announced to the watermark gate's %d keys, whatever the shard count\n",
			c.DedupElements, c.DedupElementsPerThousand(), c.Counters[string(metrics.WindowFanOuts)], transforms.GateKeys)
	}
	if reloads, ok := c.Counters[string(metrics.DedupStateReloads)]; ok {
		fmt.Fprintf(&b, "dedup cache: %d shard reloads from the runner's state, %d evictions (near zero past each shard's first load when --dedup-cache holds the shards a worker owns)\n",
			reloads, c.Counters[string(metrics.DedupCacheEvictions)])
	}
	if ra := s.ReadAhead; ra != nil {
		fmt.Fprintf(&b, "read-ahead: at most %d records waited for the dedup step (--read-ahead=%d)", ra.Peak, ra.Budget)
		if ra.PastBudget > 0 {
			fmt.Fprintf(&b, "; %d source calls read past it while the records waiting were held behind the watermark", ra.PastBudget)
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\nrows emitted: %s; sink accepted %d revisions, %d stale; %d audit rows inserted",
		stateCounts(c.Rows), c.SinkAccepted, c.SinkStale, c.SinkAudit)
	if c.SinkRetries > 0 {
		fmt.Fprintf(&b, "; %d write retries", c.SinkRetries)
	}
	b.WriteString("\n")
	writeDelays(&b, c)

	v := s.view
	if v.Readable {
		t, byState := v.Tally, map[string]int64{}
		for st, n := range t.Current {
			byState[st.String()] += n
		}
		fmt.Fprintf(&b, "sink %s now holds %d windows (%s) and %d revisions; too_late_events %d, conflict_events %d, quarantined_events %d\n",
			s.Sink, t.Keys(), stateCounts(byState), t.Changelog, t.TooLate, t.Conflicts, t.Quarantined)
		if len(t.Latest) > 0 {
			fmt.Fprintf(&b, "\nlatest hourly rows (%d of %d):\n", len(t.Latest), t.Keys())
			writeRows(&b, t.Latest)
		}
	}
	if v.Query != "" {
		fmt.Fprintf(&b, "\nquery: %s\n", v.Query)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDelays prints the delay percentiles and the non-empty buckets.
func writeDelays(b *strings.Builder, c metrics.Counts) {
	if c.Lateness.Total == 0 && c.Arrival.Total == 0 {
		return
	}
	fmt.Fprintf(b, "\ndelays of %d valid events (bucket counters; a percentile is below its bucket's upper bound):\n", c.Lateness.Total)
	for _, d := range c.Delays() {
		var parts []string
		for _, bk := range d.Buckets {
			if bk.Count > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", bk.Label, bk.Count))
			}
		}
		fmt.Fprintf(b, "  %-15s %s  (%s)\n", d.Label, d.Percentiles(), strings.Join(parts, ", "))
	}
}

func writeRows(w io.Writer, rows []model.Row) {
	t := report.NewTable("", "window_start", "window_end", "dims", "revenue", "events", "revision", "state")
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{model.FormatTime(r.WindowStart), model.FormatTime(r.WindowEnd), r.Dims,
			model.FormatMicros(r.RevenueMicros), strconv.FormatInt(r.EventCount, 10), strconv.FormatInt(r.Revision, 10), r.State.String()})
	}
	t.WriteText(w)
}

// stateCounts renders counts by result state in lifecycle order.
func stateCounts(m map[string]int64) string {
	var parts []string
	for _, st := range model.ResultStates {
		if n := m[st.String()]; n > 0 {
			parts = append(parts, st.String()+" "+strconv.FormatInt(n, 10))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// breakdown renders a map as "(a 1, b 2)" in key order, or "" when empty.
func breakdown(m map[string]int64, prefix string) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s%s %d", prefix, k, m[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// writeReport writes the run report (--report): the job, its settings and figures, the watermark
// per partition traced from the raw log (or archive), every key's revisions and the audit sizes.
func writeReport(path string, s *Summary, po pipeline.Options) error {
	run := report.Run{
		Title:    "Hourly revenue: " + s.Source,
		Started:  s.Started,
		Finished: s.Started.Add(s.Duration),
		Settings: s.Settings,
		Job:      s.jobFigures(),
	}
	if !s.unchecked {
		c := s.Counts
		run.Counts = &c
	}
	if v := s.view; v.Readable {
		changelog, err := v.changelog(context.Background())
		if err != nil {
			return fmt.Errorf("report %s: %w", path, err)
		}
		run.Windows = report.WindowsFromChangelog(changelog)
		run.Audit = &v.Tally.AuditCounts
	}
	// An archive that does not exist (nothing was pulled) has no trace.
	dir := s.Source
	if s.Archive != "" {
		dir = s.Archive
		if files.CheckDir(context.Background(), dir) != nil {
			dir = ""
		}
	}
	if dir != "" {
		parts, delays, err := report.TraceFolder(dir, po.Watermark, po.Event, time.Now())
		if err != nil {
			return fmt.Errorf("report %s: trace %s: %w", path, dir, err)
		}
		run.Partitions, run.Delays = parts, delays
	}
	return report.Write(path, run)
}

// jobFigures is what the report says about the job itself.
func (s *Summary) jobFigures() []report.Figure {
	source := s.Source
	if s.Demo {
		source += " (demo)"
	}
	f := []report.Figure{{Name: "source", Value: source}}
	add := func(name, value string) {
		if value != "" {
			f = append(f, report.Figure{Name: name, Value: value})
		}
	}
	add("archive", s.Archive)
	add("sink", s.Sink)
	add("runner", s.Runner)
	add("job", s.JobID)
	add("state", s.State)
	if s.Interrupted {
		add("interrupted", "readers stopped and the job was cancelled; no window was made FINAL early")
	}
	add("error", s.Error)
	add("query", s.view.Query)
	return f
}

// sinkView is what the summary and report show of the sink: its tables counted (COUNT(*)) and the
// latest current rows.
type sinkView struct {
	Readable bool
	Tally    sink.Tally
	// Query tells the user how to look at the rows.
	Query string
	spec  sink.Spec
}

// readSink counts the sink's tables after a run (Reader.Tally).
func readSink(ctx context.Context, spec sink.Spec) (sinkView, error) {
	v := sinkView{spec: spec}
	switch spec.Scheme {
	case sink.SchemeSQLite:
		v.Query = fmt.Sprintf("sqlite3 %s 'select * from hourly_revenue'", shellQuote(spec.Path))
	case sink.SchemeBigQuery:
		v.Query = fmt.Sprintf("bq query --nouse_legacy_sql 'select * from `%s.%s.hourly_revenue`'", spec.Project, spec.Dataset)
	case sink.SchemeJSONL:
		v.Query = fmt.Sprintf("jq -c . %s (a changelog: the highest revision per window and dims is current)",
			shellQuote(filepath.Join(spec.Path, jsonl.ChangelogFile)))
	default:
		return sinkView{Query: "the console sink printed every firing above"}, nil
	}
	db, ok, err := sink.OpenReader(ctx, spec)
	if err != nil || !ok {
		return v, err
	}
	defer db.Close()
	v.Readable = true
	v.Tally, err = db.Tally(ctx, latestRows)
	return v, err
}

// changelog reads every revision the sink holds, for the run report.
func (v sinkView) changelog(ctx context.Context) ([]model.Row, error) {
	db, ok, err := sink.OpenReader(ctx, v.spec)
	if err != nil || !ok {
		return nil, err
	}
	defer db.Close()
	return sink.Rows(db.Changelog(ctx, sink.Query{}))
}

// shellQuote quotes a path for a command the user can paste.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
