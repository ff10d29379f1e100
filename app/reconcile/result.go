package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/transforms"
)

func init() {
	register.Function2x2[string, Totals, string, error](formatTotal)
	register.Function1x2[Stats, string, error](formatStats)
	register.Function2x1[Comparison, func(string), error](formatComparison)
	register.Emitter1[string]()
}

// resultLine is one line of the result file: a key's totals, the run's Stats (exactly one), the
// "comparison" head, or a "diff" or "open" line per differing key.
type resultLine struct {
	Kind        string          `json:"kind"` // "total", "stats", "comparison", "diff" or "open"
	WindowStart int64           `json:"window_start_ms,omitempty"`
	Dims        string          `json:"dims,omitempty"`
	Totals      *Totals         `json:"totals,omitempty"`
	Stats       *Stats          `json:"stats,omitempty"`
	Comparison  *comparisonHead `json:"comparison,omitempty"`
	Diff        *Diff           `json:"diff,omitempty"`
}

// comparisonHead is Comparison without its diffs, which follow one a line (one line could outgrow
// the reader's buffer), with their number so a missing one is noticed.
type comparisonHead struct {
	Checked     int `json:"windows_compared"`
	OpenChecked int `json:"open_windows_compared"`
	Diffs       int `json:"diff_lines"`
	Open        int `json:"open_lines"`
	// Unreadable rows are few: they ride on this line.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// WriteResult writes Recompute's outputs and the Comparison to one JSON-lines file at path (any
// Beam filesystem). A zero comparison writes the recomputation only.
func WriteResult(s beam.Scope, totals, stats, comparison beam.PCollection, path string) {
	s = s.Scope("WriteResult")
	parts := []beam.PCollection{beam.ParDo(s, formatTotal, totals), beam.ParDo(s, formatStats, stats)}
	if comparison.IsValid() {
		parts = append(parts, beam.ParDo(s, formatComparison, comparison))
	}
	textio.Write(s, path, beam.Flatten(s, parts...))
}

func formatTotal(key string, t Totals) (string, error) {
	start, dims, err := transforms.ParseWindowKey(key)
	if err != nil {
		return "", fmt.Errorf("reconcile: %w", err)
	}
	b, err := json.Marshal(resultLine{Kind: "total", WindowStart: start, Dims: dims, Totals: &t})
	return string(b), err
}

func formatStats(st Stats) (string, error) {
	b, err := json.Marshal(resultLine{Kind: "stats", Stats: &st})
	return string(b), err
}

func formatComparison(c Comparison, emit func(string)) error {
	lines := []resultLine{{Kind: "comparison", Comparison: &comparisonHead{
		Checked: c.Checked, OpenChecked: c.OpenChecked, Diffs: len(c.Diffs), Open: len(c.Open), Unreadable: c.Unreadable}}}
	for i := range c.Diffs {
		lines = append(lines, resultLine{Kind: "diff", Diff: &c.Diffs[i]})
	}
	for i := range c.Open {
		lines = append(lines, resultLine{Kind: "open", Diff: &c.Open[i]})
	}
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("reconcile: comparison: %w", err)
		}
		emit(string(b))
	}
	return nil
}

// Result is what the pipeline found.
type Result struct {
	Totals map[Key]Totals
	Stats  Stats
	// Comparison is CompareWithSink's, nil when the file has none.
	Comparison *Comparison
}

// ReadResult reads a file written by WriteResult.
func ReadResult(ctx context.Context, path string) (Result, error) {
	f, err := files.Open(ctx, path, 0)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	defer f.Close()
	res := Result{Totals: map[Key]Totals{}}
	var (
		head         *comparisonHead
		stats, heads int
		diffs, opens []Diff
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l resultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return Result{}, fmt.Errorf("reconcile: read result %s:%d: %w", path, n, err)
		}
		switch {
		case l.Kind == "total" && l.Totals != nil:
			k := Key{WindowStart: l.WindowStart, Dims: l.Dims}
			if _, dup := res.Totals[k]; dup {
				return Result{}, fmt.Errorf("reconcile: read result %s:%d: key %s twice", path, n, k)
			}
			res.Totals[k] = *l.Totals
		case l.Kind == "stats" && l.Stats != nil:
			res.Stats = *l.Stats
			stats++
		case l.Kind == "comparison" && l.Comparison != nil:
			head = l.Comparison
			heads++
		case l.Kind == "diff" && l.Diff != nil:
			diffs = append(diffs, *l.Diff)
		case l.Kind == "open" && l.Diff != nil:
			opens = append(opens, *l.Diff)
		default:
			return Result{}, fmt.Errorf("reconcile: read result %s:%d: unknown line kind %q", path, n, l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	switch {
	case stats != 1: // without the stats line the file is not a complete result
		return Result{}, fmt.Errorf("reconcile: read result %s: %d stats lines, want 1 (incomplete result?)", path, stats)
	case heads > 1:
		return Result{}, fmt.Errorf("reconcile: read result %s: %d comparison lines, want at most 1", path, heads)
	case head == nil && len(diffs)+len(opens) > 0:
		return Result{}, fmt.Errorf("reconcile: read result %s: diff lines without a comparison line (incomplete result?)", path)
	case head != nil && (len(diffs) != head.Diffs || len(opens) != head.Open):
		return Result{}, fmt.Errorf("reconcile: read result %s: %d diff and %d open lines, the comparison line says %d and %d (incomplete result?)",
			path, len(diffs), len(opens), head.Diffs, head.Open)
	}
	if head != nil {
		// textio writes lines in no particular order; Compare's is by key.
		byKey := func(a, b Diff) int { return compareKeys(a.Key, b.Key) }
		slices.SortFunc(diffs, byKey)
		slices.SortFunc(opens, byKey)
		res.Comparison = &Comparison{Checked: head.Checked, Diffs: diffs, OpenChecked: head.OpenChecked, Open: opens,
			Unreadable: head.Unreadable}
	}
	return res, nil
}
