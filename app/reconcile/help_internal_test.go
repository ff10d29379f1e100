package reconcile

import (
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/testing/golden"
)

// TestHelpGolden: --help is the golden text: the exit codes, every flag of
// the table once with at most one default, the Beam runner's flags after
// the command's (they used to be mixed into 167 lines of the flag package's
// dump), and SPEC §6's shared flags that play no part in a recomputation
// described as such.
func TestHelpGolden(t *testing.T) {
	var b strings.Builder
	if err := command.Usage(&b); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/help.golden", []byte(b.String()))
	golden.CheckHelp(t, b.String(), flagTable(new(Options), new(RangeFlags)))
	described := golden.HelpFlags(t, b.String())
	for _, shared := range []string{"early", "idle-timeout", "dedup-retention"} {
		if d := described[shared]; !strings.Contains(d, "no part in a recomputation") {
			t.Errorf("--%s is described as %q; want it said to play no part in a recomputation", shared, d)
		}
	}
}
