package deps

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of a package: its own path and every
// package it depends on, directly or not (test files excluded, as in a
// build).
type pkg struct {
	ImportPath string
	Deps       []string
}

// offenders returns, for each package outside module/testing/, the
// module/testing/ packages it depends on.
func offenders(module string, pkgs []pkg) map[string][]string {
	tests := module + "/testing/"
	out := map[string][]string{}
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, tests) {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, tests) {
				out[p.ImportPath] = append(out[p.ImportPath], d)
			}
		}
	}
	return out
}

// goList lists the packages matching patterns, from the module's root.
func goList(t *testing.T, patterns ...string) (string, []pkg) {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir, module, _ := strings.Cut(strings.TrimSpace(string(root)), " ")
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Deps"}, patterns...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %v: %v: %s", patterns, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", patterns, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}

// TestBinariesFreeOfTesting is issue 13's check: `go list -deps ./cmd/...`
// shows no package under testing/.
func TestBinariesFreeOfTesting(t *testing.T) {
	module, pkgs := goList(t, "./cmd/...")
	if len(pkgs) == 0 {
		t.Fatal("go list ./cmd/... listed no package")
	}
	for p, ds := range offenders(module, pkgs) {
		t.Errorf("%s depends on %s: a shipped binary must not carry test packages", p, strings.Join(ds, ", "))
	}
}

// TestProductFreeOfTesting extends the check to every package outside
// testing/, so that a library cannot bring a test package into a binary
// that is added later.
func TestProductFreeOfTesting(t *testing.T) {
	module, pkgs := goList(t, "./...")
	for p, ds := range offenders(module, pkgs) {
		t.Errorf("%s depends on %s: move what it needs out of testing/ or the package into it", p, strings.Join(ds, ", "))
	}
}

// TestOffenders shows the check can fail: a binary reaching testing/ through
// a library is reported, testing/'s own packages and lookalike paths are not.
func TestOffenders(t *testing.T) {
	const m = "example.com/m"
	got := offenders(m, []pkg{
		{ImportPath: m + "/cmd/a", Deps: []string{"fmt", m + "/lib", m + "/testing/oracle"}},
		{ImportPath: m + "/cmd/b", Deps: []string{m + "/testingx", "example.com/other/testing/x"}},
		{ImportPath: m + "/testing/bench", Deps: []string{m + "/testing/oracle"}},
	})
	if len(got) != 1 || !slices.Equal(got[m+"/cmd/a"], []string{m + "/testing/oracle"}) {
		t.Errorf("offenders = %v, want only cmd/a → testing/oracle", got)
	}
}

// backends are what the job graph's packages must not link (issue 29):
// the sink backends' clients (BigQuery, SQLite), GCS's and S3's, and the embedded
// runner. A worker gets them from the binary that runs it, which registers
// them (sinks, internal/files/gcs, internal/files/s3); transforms and pipeline only name them.
var backends = []string{"bigquery", "modernc.org/sqlite", "cloud.google.com/go/storage",
	"io/filesystem/gcs", "gcsx", "aws-sdk-go", "io/filesystem/s3", "runners/prism", "internal/localrunner"}

// backendsOf returns, for each package, the packages it depends on (or is)
// whose path contains one of backends.
func backendsOf(pkgs []pkg) map[string][]string {
	out := map[string][]string{}
	for _, p := range pkgs {
		for _, d := range append([]string{p.ImportPath}, p.Deps...) {
			if slices.ContainsFunc(backends, func(b string) bool { return strings.Contains(d, b) }) {
				out[p.ImportPath] = append(out[p.ImportPath], d)
			}
		}
	}
	return out
}

// TestGraphFreeOfBackends is issue 29's check: `go list -deps ./transforms
// ./pipeline` names no BigQuery, SQLite, GCS or prism package.
func TestGraphFreeOfBackends(t *testing.T) {
	_, pkgs := goList(t, "./transforms", "./pipeline")
	if len(pkgs) != 2 {
		t.Fatalf("go list ./transforms ./pipeline listed %d packages, want 2", len(pkgs))
	}
	for p, ds := range backendsOf(pkgs) {
		t.Errorf("%s depends on %d backend packages: %s; it may name a sink (sinks/sink) or a path (internal/files), never link a backend", p, len(ds), strings.Join(ds, ", "))
	}
}

// TestBackendsOf shows the check can fail: a backend reached directly or
// through a library is reported, the contract packages are not.
func TestBackendsOf(t *testing.T) {
	const m = "example.com/m"
	got := backendsOf([]pkg{
		{ImportPath: m + "/transforms", Deps: []string{"fmt", m + "/sinks/sink", m + "/internal/files", "cloud.google.com/go/storage"}},
		{ImportPath: m + "/pipeline", Deps: []string{m + "/internal/localrunner", "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism", "modernc.org/sqlite/lib", "google.golang.org/api/bigquery/v2"}},
		{ImportPath: m + "/clean", Deps: []string{m + "/sinks/sink", "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"}},
	})
	want := map[string][]string{
		m + "/transforms": {"cloud.google.com/go/storage"},
		m + "/pipeline": {m + "/internal/localrunner", "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism",
			"modernc.org/sqlite/lib", "google.golang.org/api/bigquery/v2"},
	}
	if len(got) != len(want) || !slices.Equal(got[m+"/transforms"], want[m+"/transforms"]) || !slices.Equal(got[m+"/pipeline"], want[m+"/pipeline"]) {
		t.Errorf("backendsOf = %v, want %v", got, want)
	}
}
