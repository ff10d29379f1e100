package all_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/sinks/bigquery"
	"github.com/revenue-stream/hourly/sinks/sink"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, in := range []string{"sqlite:" + filepath.Join(dir, "r.db"), "jsonl:" + filepath.Join(dir, "out"), "console"} {
		spec, err := sink.ParseSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sink.Open(ctx, spec)
		if err != nil {
			t.Fatalf("Open(%s): %v", in, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close(%s): %v", in, err)
		}
	}

	spec, err := sink.ParseSpec("bigquery:my-project.revenue")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: the open fails (within the context's
	// deadline) and returns no sink.
	t.Setenv(bigquery.EmulatorHostEnv, "127.0.0.1:1")
	// The REST emulator alone would send the appends to Google: refused.
	t.Setenv(bigquery.StorageEmulatorHostEnv, "")
	if s, err := sink.Open(ctx, spec); s != nil || err == nil || !strings.Contains(err.Error(), bigquery.StorageEmulatorHostEnv+" is not") {
		t.Fatalf("Open(bigquery, REST emulator only) = %v, %v; want an error naming %s", s, err, bigquery.StorageEmulatorHostEnv)
	}
	t.Setenv(bigquery.StorageEmulatorHostEnv, "127.0.0.1:1")
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := sink.Open(bctx, spec)
	if s != nil || err == nil || !strings.Contains(err.Error(), "bigquery sink bigquery:my-project.revenue") {
		t.Fatalf("Open(bigquery, unreachable) = %v, %v; want an error naming the sink", s, err)
	}

	// A failed open returns a nil interface, not a typed nil.
	s, err = sink.Open(ctx, sink.Spec{Scheme: "sqlite", Path: filepath.Join(dir, "missing", "dir", "r.db")})
	if err == nil || s != nil {
		t.Fatalf("Open(sqlite in a missing directory) = %v, %v", s, err)
	}
}

// OpenProgress is false for what keeps no progress or does not exist yet.
func TestOpenProgressOfNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, spec := range []sink.Spec{{Scheme: sink.SchemeConsole}, {Scheme: sink.SchemeSQLite, Path: filepath.Join(dir, "none.db")},
		{Scheme: sink.SchemeJSONL, Path: filepath.Join(dir, "none")}} {
		p, ok, err := sink.OpenProgress(ctx, spec)
		if p != nil || ok || err != nil {
			t.Errorf("OpenProgress(%s) = %v, %v, %v; want nothing", spec, p, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("OpenProgress created the SQLite file: %v", err)
	}
}
