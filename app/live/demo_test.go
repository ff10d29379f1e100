package live_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// TestLiveDirOwnership checks that the live demo empties only a folder it
// made.
func TestLiveDirOwnership(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	d, err := live.NewDemo(dir, pipeline.Defaults().WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.PrepareDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p0", "old.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.PrepareDir(); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "p*", "*")); len(files) != 0 {
		t.Errorf("the live folder was not emptied: %v", files)
	}
	d.Dir = t.TempDir()
	if err := d.PrepareDir(); err == nil || !strings.Contains(err.Error(), "was not made by the live demo") {
		t.Errorf("a foreign folder: %v", err)
	}
}

// TestLiveDemoStartsClean: the live demo's own sink is removed with an
// earlier run's rows (and SQLite's side files) before the run; a sink the
// user named is kept as it is.
func TestLiveDemoStartsClean(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, f := range []string{"demo-live.db", "demo-live.db-wal", "mine.db"} {
		if err := os.WriteFile(f, []byte("an earlier run"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{live.DemoSink, "sqlite:mine.db"} {
		spec, err := sink.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := live.StartClean(spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"demo-live.db", "demo-live.db-wal"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s survived the live demo's start: %v", f, err)
		}
	}
	if b, err := os.ReadFile("mine.db"); err != nil || string(b) != "an earlier run" {
		t.Errorf("the user's sink was touched: %q, %v", b, err)
	}
}
