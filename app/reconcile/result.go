package reconcile

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/transforms"
)

func init() {
	register.Function3x2[Stats, func(*string, *Totals) bool, func(*Comparison) bool, string, error](formatResult)
	register.Iter1[Comparison]()
}

// Result is what the pipeline found: the result file's one JSON value.
type Result struct {
	Totals []KeyTotals `json:"totals"`
	Stats  Stats       `json:"stats"`
	// Comparison is CompareWithSink's, nil when the file has none.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// KeyTotals is a key's recomputed totals.
type KeyTotals struct {
	Key
	Totals Totals
}

// WriteResult writes Recompute's outputs and the Comparison to one file at path (any Beam
// filesystem) as one JSON value, which ReadResult reads. A zero comparison writes the
// recomputation only.
func WriteResult(s beam.Scope, totals, stats, comparison beam.PCollection, path string) {
	s = s.Scope("WriteResult")
	if !comparison.IsValid() {
		comparison = beam.CreateList(s, []Comparison{})
	}
	// stats is a single element: its step runs once, with the totals and comparison beside it.
	textio.Write(s, path, beam.ParDo(s, formatResult, stats, beam.SideInput{Input: totals}, beam.SideInput{Input: comparison}))
}

func formatResult(st Stats, totals func(*string, *Totals) bool, comparison func(*Comparison) bool) (string, error) {
	res := Result{Stats: st}
	var err error
	if res.Totals, err = readTotals(totals); err != nil {
		return "", fmt.Errorf("reconcile: %w", err)
	}
	var c Comparison
	if comparison(&c) {
		res.Comparison = &c
	}
	b, err := json.Marshal(res)
	return string(b), err
}

// readTotals reads the totals side input (keyed by transforms.WindowKey), never nil.
func readTotals(totals func(*string, *Totals) bool) ([]KeyTotals, error) {
	out := []KeyTotals{}
	var (
		wk string
		t  Totals
	)
	for totals(&wk, &t) {
		start, dims, err := transforms.ParseWindowKey(wk)
		if err != nil {
			return nil, err
		}
		out = append(out, KeyTotals{Key{WindowStart: start, Dims: dims}, t})
	}
	return out, nil
}

// ReadResult reads a file written by WriteResult.
func ReadResult(ctx context.Context, path string) (Result, error) {
	f, err := files.Open(ctx, path, 0)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	defer f.Close()
	// One value, written whole: a file cut short does not decode.
	var res Result
	if err := json.NewDecoder(f).Decode(&res); err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w (incomplete result?)", path, err)
	}
	return res, nil
}
