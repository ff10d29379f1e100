package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// Reconcile is what cmd/reconcile found (reconcile.NewReport builds it). Money is given as exact
// decimal strings and as micros.
type Reconcile struct {
	RunID    string `json:"run_id"`
	Started  string `json:"started"`
	Finished string `json:"finished"`
	// ExitCode is SPEC §6's (see Verdict).
	ExitCode int `json:"exit_code"`

	Source     string            `json:"source"`
	Partitions []string          `json:"partitions"`
	Sink       string            `json:"sink"`
	Range      string            `json:"range"`
	Apply      bool              `json:"apply"`
	Tolerance  string            `json:"tolerance"`
	Config     map[string]string `json:"run_config"`

	// Stats are the raw log's figures for machines; RawLog lists them for people.
	Stats  any      `json:"stats"`
	RawLog []Figure `json:"-"`

	WindowsChecked   int `json:"windows_checked"`
	WindowsDiffering int `json:"windows_differing"`
	Material         int `json:"material"`
	Applied          int `json:"applied"`
	Held             int `json:"held_back"`
	// Unexplained counts the material differences a human must look at (unexplained or held).
	Unexplained int `json:"unexplained"`
	// Unreadable names each unreadable sink row in one line; each counts as unexplained.
	Unreadable []string `json:"unreadable_rows,omitempty"`
	// StreamTerms restates the raw log's figures in the stream's terms, to set against its
	// conservation line.
	StreamTerms      string         `json:"-"`
	ByClass          map[string]int `json:"by_classification"`
	TotalDelta       string         `json:"total_delta"`
	TotalDeltaMicros int64          `json:"total_delta_micros"`
	TotalDeltaCount  int64          `json:"total_delta_count"`
	// Metrics are the comparison's figures by name, in MetricNames order; MetricsSource and
	// MetricsNote say where they come from.
	Metrics       map[string]int64 `json:"metrics"`
	MetricsSource string           `json:"metrics_source"`
	MetricsNote   string           `json:"-"`
	Namespace     string           `json:"-"`
	MetricNames   []string         `json:"-"`
	Diffs         []Diff           `json:"diffs"`

	OpenChecked   int    `json:"open_windows_checked"`
	OpenDiffering int    `json:"open_windows_differing"`
	Open          []Diff `json:"open_windows"`
}

// Diff is one key whose streamed row differs from the raw log's recount.
type Diff struct {
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
	// Held: material, but no raw event in its window, so --apply does not write it.
	Held bool `json:"held_back,omitempty"`
}

// AppliedCell says what --apply did with a diff.
func (d Diff) AppliedCell() string {
	switch {
	case d.Applied > 0:
		return fmt.Sprintf("rev %d", d.Applied)
	case d.Held:
		return "held: window not in raw log"
	}
	return "-"
}

// ClassCell is the classification, marked when within the tolerance (not material).
func (d Diff) ClassCell() string {
	if !d.Material && d.Classification != "" {
		return d.Classification + " (within tolerance)"
	}
	return cmp.Or(d.Classification, "-")
}

// Verdict is the run's outcome in one sentence, ending in its exit code (SPEC §6).
func (r Reconcile) Verdict() string {
	switch r.ExitCode {
	case 0:
		if r.Material == 0 {
			return "nothing material found (exit 0)"
		}
		return fmt.Sprintf("nothing material left: %d explained differences (%s) written as corrections (exit 0)", r.Material, r.classes(false))
	case 3:
		return fmt.Sprintf("%d explained differences pending (%s): run again with --apply to write them (exit 3)",
			r.Material, r.classes(false))
	}
	var what []string
	if r.Unexplained > 0 {
		what = append(what, fmt.Sprintf("%d unexplained differences", r.Unexplained))
	}
	if n := len(r.Unreadable); n > 0 {
		what = append(what, fmt.Sprintf("%d unreadable sink rows", n))
	}
	if len(what) == 0 {
		what = append(what, fmt.Sprintf("%d material differences", r.Material))
	}
	v := strings.Join(what, " and ") + ": a human must look"
	if r.Apply {
		v += fmt.Sprintf("; %d corrections written", r.Applied)
	}
	return fmt.Sprintf("%s (exit %d)", v, r.ExitCode)
}

// classes sums the differing keys up by class, by name: all ("1 missing_window, 0 too_late, 0
// unexplained"), or the explained ones with a count ("18 too_late, 7 missing_window").
func (r Reconcile) classes(all bool) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(r.ByClass)) {
		if n := r.ByClass[c]; all || n > 0 && c != "unexplained" {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	return strings.Join(parts, ", ")
}

// MetricFigures lists the metrics in MetricNames order (else by name).
func (r Reconcile) MetricFigures() []Figure {
	names := r.MetricNames
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(r.Metrics))
	}
	return slicesx.Map(names, func(n string) Figure { return Figure{n, fmt.Sprint(r.Metrics[n])} })
}

// Signed renders a money delta with its sign: "+0.500000".
func Signed(micros int64) string {
	if micros > 0 {
		return "+" + model.FormatMicros(micros)
	}
	return model.FormatMicros(micros)
}

// SignedCount renders a count delta with its sign.
func SignedCount(n int64) string {
	if n > 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprint(n)
}
