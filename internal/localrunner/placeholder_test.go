package localrunner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"google.golang.org/protobuf/proto"
)

func placeholders(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(os.TempDir(), placeholderPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestRemovePlaceholderRemovesItsJobsFile is also the reproducer of the
// SDK's leak: a loopback job on prism leaves an empty
// beamloopbackworker-* file in the temporary folder, which
// RemovePlaceholder finds through the job's pipeline and removes, leaving
// another process's placeholder (the decoy) alone.
func TestRemovePlaceholderRemovesItsJobsFile(t *testing.T) {
	decoy, err := os.CreateTemp(os.TempDir(), placeholderPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	decoy.Close()
	t.Cleanup(func() { os.Remove(decoy.Name()) })
	before := placeholders(t)

	p, s := beam.NewPipelineWithRoot()
	passert.Count(s, beam.Create(s, 1, 2, 3), "n", 3)
	pr, err := prism.Execute(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var left []string // the placeholders this job (or another test process's) added
	for _, path := range placeholders(t) {
		if !slices.Contains(before, path) {
			left = append(left, path)
		}
	}
	if len(left) == 0 {
		t.Fatal("the job left no placeholder: has the SDK stopped creating it? (then RemovePlaceholder can go)")
	}

	removed := RemovePlaceholder(context.Background(), *jobopts.Endpoint, pr.JobID())
	if !slices.Contains(left, removed) {
		t.Fatalf("removed %q, want one of the new placeholders %v", removed, left)
	}
	if _, err := os.Stat(removed); !os.IsNotExist(err) {
		t.Errorf("%s is still there (stat: %v)", removed, err)
	}
	if _, err := os.Stat(decoy.Name()); err != nil {
		t.Errorf("another placeholder was touched: %v", err)
	}
	if again := RemovePlaceholder(context.Background(), *jobopts.Endpoint, pr.JobID()); again != "" {
		t.Errorf("second call: removed %q, want nothing", again)
	}
}

// TestRemovePlaceholderKeepsEverythingElse: only an empty regular file
// named beamloopbackworker-* directly in the temporary folder is removed.
func TestRemovePlaceholderKeepsEverythingElse(t *testing.T) {
	tmp := os.TempDir()
	mk := func(dir, pattern string, content string) string {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		t.Cleanup(func() { os.Remove(f.Name()) })
		return f.Name()
	}
	dep := func(urn, path string) *pipepb.ArtifactInformation {
		b, err := proto.Marshal(&pipepb.ArtifactFilePayload{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return &pipepb.ArtifactInformation{TypeUrn: urn, TypePayload: b}
	}
	placeholder := mk(tmp, placeholderPrefix+"*", "")
	for _, tc := range []struct {
		name string
		dep  *pipepb.ArtifactInformation
		want string
	}{
		{"the placeholder", dep(graphx.URNArtifactFileType, placeholder), placeholder},
		{"another name", dep(graphx.URNArtifactFileType, mk(tmp, "worker-*", "")), ""},
		{"another folder", dep(graphx.URNArtifactFileType, mk(t.TempDir(), placeholderPrefix+"*", "")), ""},
		{"not a file artifact", dep(graphx.URNArtifactURLType, placeholder), ""},
	} {
		if got := placeholderOf(tc.dep); got != tc.want {
			t.Errorf("%s: placeholderOf = %q, want %q", tc.name, got, tc.want)
		}
	}
	// What the pipeline names is removed only while it is an empty file.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(placeholder, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		placeholder: true,
		mk(tmp, placeholderPrefix+"*", "\x7fELF"):       false, // a worker binary
		filepath.Join(tmp, placeholderPrefix+"missing"): false,
		t.TempDir(): false,
		link:        false,
	} {
		if got := emptyFile(path); got != want {
			t.Errorf("emptyFile(%s) = %v, want %v", path, got, want)
		}
	}
}
