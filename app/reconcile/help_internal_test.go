package reconcile

import (
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/testing/golden"
)

// TestHelpGolden: --help is the golden text: the exit codes, every flag of
// the table once with at most one default, the Beam runner's flags after
// the command's (they used to be mixed into 167 lines of the flag package's
// dump), and none of the stream-only flags reconcile used to accept unused.
func TestHelpGolden(t *testing.T) {
	var b strings.Builder
	if err := Usage(&b); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/help.golden", []byte(b.String()))
	golden.CheckHelp(t, b.String(), flagTable(new(Options), new(rangeFlags)))
	described := golden.HelpFlags(t, b.String())
	for _, gone := range []string{"early", "idle-timeout", "dedup-retention"} {
		if d, ok := described[gone]; ok {
			t.Errorf("--%s is described (%s); reconcile does not use it", gone, d)
		}
	}
}
