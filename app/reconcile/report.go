package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/model"
)

// Report is the run as the report files and the summary present it. Money
// is given as exact decimal strings (six fractional digits) and as micros.
type Report struct {
	RunID    string `json:"run_id"`
	Started  string `json:"started"`
	Finished string `json:"finished"`
	ExitCode int    `json:"exit_code"`

	Source     string            `json:"source"`
	Partitions []string          `json:"partitions"`
	Sink       string            `json:"sink"`
	Range      string            `json:"range"`
	Apply      bool              `json:"apply"`
	Tolerance  string            `json:"tolerance"`
	Config     map[string]string `json:"run_config"`

	Stats Stats `json:"stats"`

	WindowsChecked   int            `json:"windows_checked"`
	WindowsDiffering int            `json:"windows_differing"`
	Material         int            `json:"material"`
	Applied          int            `json:"applied"`
	Held             int            `json:"held_back"`
	ByClass          map[string]int `json:"by_classification"`
	TotalDelta       string         `json:"total_delta"`
	TotalDeltaMicros int64          `json:"total_delta_micros"`
	TotalDeltaCount  int64          `json:"total_delta_count"`
	// Metrics are the comparison's figures by metric name, in Namespace:
	// the pipeline's Beam counters (Outcome.Counters). MetricsSource says
	// where they come from: MetricsFromCounters, or MetricsFromComparison
	// when the runner reported no counters.
	Metrics       map[string]int64 `json:"metrics"`
	MetricsSource string           `json:"metrics_source"`
	Diffs         []ReportDiff     `json:"diffs"`

	OpenChecked   int          `json:"open_windows_checked"`
	OpenDiffering int          `json:"open_windows_differing"`
	Open          []ReportDiff `json:"open_windows"`
}

// Report.MetricsSource values.
const (
	// MetricsFromCounters: the Beam counters of the pipeline's comparison
	// step, as the runner reported them.
	MetricsFromCounters = "beam_counters"
	// MetricsFromComparison: Comparison.Metrics(), the runner having
	// reported none of those counters.
	MetricsFromComparison = "comparison"
)

// ReportDiff is one differing key.
type ReportDiff struct {
	WindowStart    string `json:"window_start"`
	Dims           string `json:"dims"`
	StreamedState  string `json:"streamed_state"` // "" when the sink has no row
	StreamedRev    int64  `json:"streamed_revision"`
	Streamed       string `json:"streamed_revenue"`
	Recomputed     string `json:"recomputed_revenue"`
	Delta          string `json:"delta"`
	StreamedMicros int64  `json:"streamed_revenue_micros"`
	RecompMicros   int64  `json:"recomputed_revenue_micros"`
	DeltaMicros    int64  `json:"delta_micros"`
	StreamedCount  int64  `json:"streamed_count"`
	RecompCount    int64  `json:"recomputed_count"`
	DeltaCount     int64  `json:"delta_count"`
	TooLate        string `json:"too_late_revenue"`
	TooLateCount   int64  `json:"too_late_count"`
	Classification string `json:"classification,omitempty"`
	Material       bool   `json:"material"`
	Applied        int64  `json:"applied_revision,omitempty"`
	// Held: material, but its window has no events in the raw log, so
	// --apply does not write it (see Diff.InLog).
	Held bool `json:"held_back,omitempty"`
}

// NewReport builds the report of an outcome. Diffs are listed by size:
// largest revenue difference first, then largest count difference.
func NewReport(o Outcome) Report {
	r := Report{
		RunID:            o.RunID,
		Started:          o.Started.Format(time.RFC3339),
		Finished:         o.Finished.Format(time.RFC3339),
		ExitCode:         o.ExitCode(),
		Source:           o.Options.Source,
		Partitions:       o.Partitions,
		Sink:             o.Options.Sink.String(),
		Range:            o.Options.Range.String(),
		Apply:            o.Options.Apply,
		Tolerance:        model.FormatMicros(o.Options.ToleranceMicros),
		Config:           o.Options.RunConfig(),
		Stats:            o.Stats,
		WindowsChecked:   o.Checked,
		WindowsDiffering: len(o.Diffs),
		Material:         len(o.Material()),
		Applied:          o.Applied,
		Held:             len(o.Held()),
		ByClass:          map[string]int{ClassTooLate: 0, ClassMissingWindow: 0, ClassUnexplained: 0},
		OpenChecked:      o.OpenChecked,
		OpenDiffering:    len(o.Open),
		Metrics:          o.Counters,
		MetricsSource:    MetricsFromCounters,
		Diffs:            []ReportDiff{},
		Open:             []ReportDiff{},
	}
	if !o.CountersFromRunner {
		r.MetricsSource = MetricsFromComparison
		if r.Metrics == nil { // an Outcome Run did not make
			r.Metrics = o.Comparison.Metrics()
		}
	}
	for _, d := range bySize(o.Diffs) {
		r.ByClass[d.Classification]++
		r.TotalDeltaMicros += d.DeltaMicros()
		r.TotalDeltaCount += d.DeltaCount()
		r.Diffs = append(r.Diffs, reportDiff(d))
	}
	r.TotalDelta = signed(r.TotalDeltaMicros)
	for _, d := range bySize(o.Open) {
		r.Open = append(r.Open, reportDiff(d))
	}
	return r
}

func bySize(diffs []Diff) []Diff {
	out := slices.Clone(diffs)
	slices.SortStableFunc(out, func(a, b Diff) int {
		return cmp.Or(cmp.Compare(abs(b.DeltaMicros()), abs(a.DeltaMicros())),
			cmp.Compare(abs(b.DeltaCount()), abs(a.DeltaCount())), compareKeys(a.Key, b.Key))
	})
	return out
}

func reportDiff(d Diff) ReportDiff {
	rd := ReportDiff{
		WindowStart:    model.FormatTime(d.WindowStart),
		Dims:           d.Dims,
		Streamed:       model.FormatMicros(d.Streamed.RevenueMicros),
		Recomputed:     model.FormatMicros(d.Recomputed.RevenueMicros),
		Delta:          signed(d.DeltaMicros()),
		StreamedMicros: d.Streamed.RevenueMicros,
		RecompMicros:   d.Recomputed.RevenueMicros,
		DeltaMicros:    d.DeltaMicros(),
		StreamedCount:  d.Streamed.EventCount,
		RecompCount:    d.Recomputed.Count,
		DeltaCount:     d.DeltaCount(),
		TooLate:        model.FormatMicros(d.Recomputed.TooLateRevenueMicros),
		TooLateCount:   d.Recomputed.TooLateCount,
		Classification: d.Classification,
		Material:       d.Material,
		Applied:        d.AppliedRevision,
		Held:           d.Material && !d.InLog,
	}
	if d.HasRow {
		rd.StreamedState, rd.StreamedRev = d.Streamed.State.String(), d.Streamed.Revision
	}
	return rd
}

// signed renders a delta with its sign, so "+0.500000" reads as a gain.
func signed(m int64) string {
	if m > 0 {
		return "+" + model.FormatMicros(m)
	}
	return model.FormatMicros(m)
}

func signedCount(n int64) string {
	if n > 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprint(n)
}

// WriteSummary prints the run's summary: what was read, what was checked,
// what differs and the top differences (at most Options.Top).
func WriteSummary(w io.Writer, o Outcome) error {
	r := NewReport(o)
	st := r.Stats
	mode := "dry run (no --apply)"
	if r.Apply {
		mode = fmt.Sprintf("--apply: %d corrections written", r.Applied)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s: %s\n", r.RunID, mode)
	fmt.Fprintf(&b, "source   %s: %d partitions, %d files, %d records (%d quarantined)\n",
		r.Source, st.Partitions, st.Files, st.Read, st.QuarantinedTotal())
	fmt.Fprintf(&b, "events   %d distinct ids, %d duplicate copies, %d ids with conflicting payloads (%d copies reported, not summed), %d ids the stream judged too late\n",
		st.IDs, st.Duplicates, st.ConflictingIDs, st.ConflictingCopies, st.TooLateIDs)
	fmt.Fprintf(&b, "range    %s\n", r.Range)
	fmt.Fprintf(&b, "windows  %d checked, %d differing (%d material: %d too_late, %d missing_window, %d unexplained)\n",
		r.WindowsChecked, r.WindowsDiffering, r.Material, r.ByClass[ClassTooLate], r.ByClass[ClassMissingWindow], r.ByClass[ClassUnexplained])
	fmt.Fprintf(&b, "delta    %s revenue, %s events\n", r.TotalDelta, signedCount(r.TotalDeltaCount))
	fmt.Fprintf(&b, "open     %d windows not yet FINAL checked, %d differing (reported only: the stream still corrects them)\n",
		r.OpenChecked, r.OpenDiffering)
	fmt.Fprintf(&b, "metrics  %s\n", metricsLine(r.Metrics))
	if r.Held > 0 {
		fmt.Fprintf(&b, "held     %d material differences are in windows without any event in the raw log: --apply does not empty them (is --source complete?)\n", r.Held)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(r.Diffs) > 0 && o.Options.Top > 0 {
		fmt.Fprintf(w, "top differences:\n")
		if err := diffTable(w, r.Diffs[:min(len(r.Diffs), o.Options.Top)], "  "); err != nil {
			return err
		}
	}
	if o.Options.Report != "" {
		fmt.Fprintf(w, "report   %s\n", o.Options.Report)
	}
	return nil
}

// metricsNote says where a report's metrics come from.
func metricsNote(r Report) string {
	if r.MetricsSource == MetricsFromCounters {
		return "Beam counters of the pipeline's comparison step, as the runner reported them"
	}
	return "computed from the comparison: the runner reported no counters"
}

// metricsLine renders the metrics as "reconcile.name=value ..." in
// MetricNames order.
func metricsLine(m map[string]int64) string {
	parts := make([]string, len(MetricNames))
	for i, n := range MetricNames {
		parts[i] = fmt.Sprintf("%s.%s=%d", Namespace, n, m[n])
	}
	return strings.Join(parts, " ")
}

func diffTable(w io.Writer, diffs []ReportDiff, indent string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%swindow_start\tdims\tstreamed\trecomputed\tdelta\tcount\tclassification\tapplied\t\n", indent)
	for _, d := range diffs {
		applied := appliedCell(d)
		class := d.Classification
		if !d.Material && class != "" {
			class += " (within tolerance)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%d→%d\t%s\t%s\t\n", indent, d.WindowStart, d.Dims, d.Streamed, d.Recomputed,
			d.Delta, d.StreamedCount, d.RecompCount, class, applied)
	}
	return tw.Flush()
}

// WriteReport writes the report file; the format follows the extension
// (.md, .json or .html; the HTML is self-contained). It writes a temporary
// file and renames it, so a reader never sees half a report.
func WriteReport(path string, o Outcome) error {
	r := NewReport(o)
	var (
		data []byte
		err  error
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		data, err = json.MarshalIndent(r, "", "  ")
		data = append(data, '\n')
	case ".md":
		data, err = markdown(r)
	case ".html":
		data, err = htmlReport(r)
	default:
		return fmt.Errorf("--report %q: want a .md, .json or .html file", path)
	}
	if err != nil {
		return fmt.Errorf("reconcile: report %s: %w", path, err)
	}
	if err := files.WriteFile(context.Background(), path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return fmt.Errorf("reconcile: report %s: %w", path, err)
	}
	return nil
}
