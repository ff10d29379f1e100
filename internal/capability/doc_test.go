package capability_test

import (
	"os"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/internal/capability"
)

// docs/operations.md's runner table says, per feature and profile, exactly
// what the table here says.
func TestOperationsTableMatchesProfiles(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "feature" {
			header = cells[1:]
			continue
		}
		if header != nil {
			rows[cells[0]] = cells[1:]
		}
	}
	var names []string
	for _, p := range capability.Profiles() {
		names = append(names, p.Name)
	}
	features := []capability.Feature{capability.ProcessingTimeTimers, capability.ProcessingTimeTimersInBatch,
		capability.EventTimeTimers, capability.UserState, capability.MapState, capability.SetState,
		capability.OrderedListState, capability.BundleFinalization, capability.SelfCheckpointing, capability.LiveMetrics}
	for _, p := range capability.Profiles() {
		for _, l := range p.Lacks {
			found := false
			for _, f := range features {
				found = found || f == l.Feature
			}
			if !found {
				t.Errorf("%s lacks %s, which the doc table has no row for", p.Name, l.Feature)
			}
		}
	}
	for _, f := range features {
		row, ok := rows[string(f)]
		if !ok {
			t.Errorf("docs/operations.md: no row %q", f)
			continue
		}
		if len(row) != len(names) {
			t.Errorf("row %q has %d cells, want %d (%v)", f, len(row), len(names), names)
			continue
		}
		for i, name := range names {
			want := "yes"
			if !capability.For(name).Has(f) {
				want = "no"
			}
			if !strings.HasPrefix(row[i], want) {
				t.Errorf("docs/operations.md: %s on %s says %q, the table says %s", f, name, row[i], want)
			}
		}
	}
}
