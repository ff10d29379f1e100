// Package golden compares a command's output with a file kept in testdata:
// UPDATE_GOLDEN=1 rewrites the file instead (an environment variable, not a
// test flag: a flag would be registered on the process's flag set, which
// the commands' --help lists).
package golden

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/internal/cli"
)

// Compare fails t unless got equals the file at path, or rewrites the file
// when UPDATE_GOLDEN=1.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (UPDATE_GOLDEN=1 rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var flagLine = regexp.MustCompile(`^  --([a-z0-9_.-]+)`)

// HelpFlags parses a --help text written by internal/cli: every flag it
// describes, with its whole description (continuation lines joined). A
// flag described twice fails t.
func HelpFlags(t testing.TB, help string) map[string]string {
	t.Helper()
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(help, "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			name = m[1]
			if _, dup := out[name]; dup {
				t.Errorf("--%s is described twice", name)
			}
			out[name] = strings.TrimSpace(line)
			continue
		}
		if name != "" && strings.HasPrefix(line, "    ") {
			out[name] += " " + strings.TrimSpace(line)
			continue
		}
		name = ""
	}
	return out
}

// CheckHelp checks a command's --help against the flag table it was written
// from: every flag described once, none with more than one default, the
// table's groups before the Beam runner's flags, and --runner's default
// named.
func CheckHelp(t testing.TB, help string, table []cli.Group) {
	t.Helper()
	described := HelpFlags(t, help)
	for _, g := range table {
		for _, f := range g.Flags {
			d, ok := described[f.Name]
			if !ok {
				t.Errorf("--%s is not described", f.Name)
			}
			if n := strings.Count(d, "(default"); n > 1 {
				t.Errorf("--%s states %d defaults: %s", f.Name, n, d)
			}
		}
	}
	first, runner := strings.Index(help, "\n"+table[0].Title+":\n"), strings.Index(help, "\nBeam runner flags:\n")
	if first < 0 || runner < first {
		t.Errorf("want the job's flags, then the runner's; got:\n%s", help)
	}
	if !strings.Contains(described["runner"], "(default prism)") {
		t.Errorf("--runner: %q, want its default prism", described["runner"])
	}
}
