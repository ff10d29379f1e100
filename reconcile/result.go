package reconcile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/transforms"

	// Local files for prism and tests; the commands register gcs:// too.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
)

func init() {
	register.Function2x2[string, Totals, string, error](formatTotal)
	register.Function1x2[Stats, string, error](formatStats)
}

// Why a file: the recomputed totals are small (one line per window and dims
// key), but the driver must get them back from workers that may run
// anywhere. A process-wide collector only works where the runner executes
// the DoFns in the driver's process (prism's loopback mode), and a DoFn
// writing to the SQLite sink only where workers share the driver's disk.
// textio writes one file through Beam's filesystem layer, so a work
// directory on gs:// serves Dataflow and a local one serves prism, and the
// file is rewritten whole if the runner retries the write.

// resultLine is one line of the result file: a window key's totals, or the
// run's Stats (exactly one).
type resultLine struct {
	Kind        string  `json:"kind"` // "total" or "stats"
	WindowStart int64   `json:"window_start_ms,omitempty"`
	Dims        string  `json:"dims,omitempty"`
	Totals      *Totals `json:"totals,omitempty"`
	Stats       *Stats  `json:"stats,omitempty"`
}

// WriteResult writes Recompute's outputs to one JSON-lines file at path
// (any Beam filesystem: a local path, gs://...).
func WriteResult(s beam.Scope, totals, stats beam.PCollection, path string) {
	s = s.Scope("WriteResult")
	lines := beam.Flatten(s, beam.ParDo(s, formatTotal, totals), beam.ParDo(s, formatStats, stats))
	textio.Write(s, path, lines)
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

// Result is what the recomputation found.
type Result struct {
	Totals map[Key]Totals
	Stats  Stats
}

// ReadResult reads a file written by WriteResult.
func ReadResult(ctx context.Context, path string) (Result, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	defer fs.Close()
	f, err := fs.OpenRead(ctx, path)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	defer f.Close()
	res := Result{Totals: map[Key]Totals{}}
	stats := 0
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
		default:
			return Result{}, fmt.Errorf("reconcile: read result %s:%d: unknown line kind %q", path, n, l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("reconcile: read result %s: %w", path, err)
	}
	if stats != 1 {
		// The stats line is always written: without it the file is not a
		// complete result.
		return Result{}, fmt.Errorf("reconcile: read result %s: %d stats lines, want 1 (incomplete result?)", path, stats)
	}
	return res, nil
}
