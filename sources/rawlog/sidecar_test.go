package rawlog

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestResolveIDPositions(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, NamedPartition)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(pdir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("2026110410.jsonl", "{}\n{}\n{}\n")
	write(SidecarName("2026110410.jsonl"), "m1\nm2\nm3\n")
	write("2026110411.jsonl", "{}\n{}\n")
	write(SidecarName("2026110411.jsonl"), "m4\nm5") // torn: m5's line was never acknowledged
	write("2026110412.jsonl", "{}\n")                // no sidecar

	got, err := ResolveIDPositions(dir, []string{"pubsub:m2", "pubsub:m4", "pubsub:m5", "pubsub:nope", "p0/a.jsonl:3", "pubsub/2026110410.jsonl:1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"pubsub:m2": "pubsub/2026110410.jsonl:2",
		"pubsub:m4": "pubsub/2026110411.jsonl:1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resolved %v, want %v", got, want)
	}
	// A folder without the archive partition resolves nothing, without error.
	if got, err := ResolveIDPositions(t.TempDir(), []string{"pubsub:m1"}); err != nil || len(got) != 0 {
		t.Fatalf("no archive: %v, %v", got, err)
	}
	// An id position is never read as a file position.
	if _, _, _, ok := ParsePosition(IDPosition("m1")); ok {
		t.Fatal("pubsub:m1 parsed as a file position")
	}
}
