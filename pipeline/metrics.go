package pipeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/transforms"
)

// Counts are the conservation figures of SPEC §4 for one run.
type Counts struct {
	Read, Counted, Duplicates, Conflicts, Quarantined, TooLate int64
	// QuarantinedBy splits Quarantined by reason.
	QuarantinedBy map[string]int64
	// Rows counts snapshot rows by result state (EARLY, ON_TIME, LATE, FINAL).
	Rows map[string]int64
	// AfterFinal counts events that reached a window after its FINAL row;
	// it must stay zero.
	AfterFinal int64
	// Counters holds every counter of the revenue namespace by name.
	Counters map[string]int64
}

// Check verifies read = counted + duplicates + conflicts + quarantined +
// too_late.
func (c Counts) Check() error {
	sum := c.Counted + c.Duplicates + c.Conflicts + c.Quarantined + c.TooLate
	if c.Read != sum {
		return fmt.Errorf("conservation violated: read %d != counted %d + duplicates %d + conflicts %d + quarantined %d + too_late %d (= %d)",
			c.Read, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate, sum)
	}
	if c.AfterFinal != 0 {
		return fmt.Errorf("%d events reached a window after its FINAL row", c.AfterFinal)
	}
	return nil
}

// String renders the identity as one line.
func (c Counts) String() string {
	return fmt.Sprintf("read %d = counted %d + duplicates %d + conflicts %d + quarantined %d + too_late %d",
		c.Read, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate)
}

// CountsFrom sums the pipeline's counters (committed values where the runner
// reports them, attempted otherwise) across steps.
func CountsFrom(pr beam.PipelineResult) Counts {
	c := Counts{QuarantinedBy: map[string]int64{}, Rows: map[string]int64{}, Counters: map[string]int64{}}
	if pr == nil {
		return c
	}
	for _, r := range pr.Metrics().AllMetrics().Counters() {
		if r.Namespace() != transforms.Namespace {
			continue
		}
		c.Counters[r.Name()] += r.Result()
	}
	for name, v := range c.Counters {
		switch {
		case name == "read":
			c.Read = v
		case name == "counted":
			c.Counted = v
		case name == "duplicates":
			c.Duplicates = v
		case name == "conflicts":
			c.Conflicts = v
		case name == "quarantined":
			c.Quarantined = v
		case name == "too_late":
			c.TooLate = v
		case name == "invariant_data_after_final":
			c.AfterFinal = v
		case strings.HasPrefix(name, "quarantined_"):
			c.QuarantinedBy[strings.TrimPrefix(name, "quarantined_")] = v
		case strings.HasPrefix(name, "rows_"):
			c.Rows[strings.TrimPrefix(name, "rows_")] = v
		}
	}
	return c
}

// Names lists the counters seen, sorted (for summaries).
func (c Counts) Names() []string {
	out := make([]string, 0, len(c.Counters))
	for n := range c.Counters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
