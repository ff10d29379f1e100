package jsonl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

func TestJSONLProgress(t *testing.T) {
	sinktest.ProgressConformance(t, func(t *testing.T) sinktest.ProgressUnder {
		dir := filepath.Join(t.TempDir(), "out")
		j, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		p := sinktest.OpenProgress(t, sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
		// The launcher's handle writes no batch: the workers' files are
		// theirs.
		if _, err := p.Write(context.Background(), sink.Batch{Progress: []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}}); err == nil {
			t.Fatal("OpenProgress's jsonl handle wrote a batch")
		}
		// A reader's handle seals nothing either.
		r, ok, err := sink.OpenReader(context.Background(), sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
		if err != nil || !ok {
			t.Fatalf("OpenReader = %v, %v", ok, err)
		}
		if err := r.(sink.ProgressStore).SealResume(context.Background(), []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}); err == nil {
			t.Fatal("OpenReader's jsonl handle sealed a resume point")
		}
		return sinktest.ProgressUnder{W: j, P: p, ResumeStored: func(t *testing.T) string {
			data, err := os.ReadFile(filepath.Join(dir, fileResume))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return string(data)
		}}
	})
}

// The checkpoint lines of the jsonl sink are the table contract's columns.
func TestJSONLCheckpointLine(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sinktest.Write(t, j, sink.Batch{Progress: []model.Checkpoint{sinktest.CP("p0", "a.jsonl", 100, 10, sinktest.MS("2026-11-04T10:00:00Z"), "r1")}})
	data, err := os.ReadFile(filepath.Join(dir, fileCheckpoints))
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte(`{"partition":"p0","file":"a.jsonl","offset":100,"line":10,"max_valid":1793786400000,"run":"r1","updated_at":"`)
	if !bytes.HasPrefix(data, prefix) || bytes.Count(data, []byte("\n")) != 1 {
		t.Fatalf("source_checkpoints.jsonl = %s, want one line starting %s", data, prefix)
	}
}

// TestJSONLSealSyncsTheRowsFirst: the workers append rows without fsync and
// the seal fsyncs its resume point. A point durable before the rows it covers
// would, after a power cut between them, make a restart skip records whose
// rows were lost: the seal fsyncs the appended files first.
func TestJSONLSealSyncsTheRowsFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Write(context.Background(), sink.Batch{Progress: []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}}); err != nil {
		t.Fatal(err)
	}
	var synced []string
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	}
	p := sinktest.OpenProgress(t, sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
	if err := p.SealResume(context.Background(), []model.Checkpoint{{Partition: "p0", File: "a", Run: "r"}}); err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(synced, fileResume); i < 0 || !slices.Contains(synced[:i], ChangelogFile) || !slices.Contains(synced[:i], fileTooLate) {
		t.Errorf("fsyncs in order %q: want %s and the audit files before %s", synced, ChangelogFile, fileResume)
	}
}
