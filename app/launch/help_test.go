package launch

import (
	"os/exec"
	"testing"

	"github.com/revenue-stream/hourly/testing/golden"
)

// TestHelpGolden: the shipped binary's --help is the golden text, every flag
// of the table described once with at most one default (the defaults used
// to be printed twice, "(default 8) (default 0)"), and the Beam runner's
// flags after the job's.
func TestHelpGolden(t *testing.T) {
	cmd := exec.Command(buildBinary(t), "--help")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	golden.Compare(t, "testdata/help.golden", out)
	golden.CheckHelp(t, string(out), flagTable(new(Options)))
}
