package pubsub

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// A run with --pubsub-shards=2 archived and acknowledged a message under
// reader key 1 (partition pubsub-01) and died before its output was
// committed. The next run starts afresh with one reader key: the archive is
// the only place the message is, so the stream must re-emit pubsub-01 too.
// The test asks for A counted in its window, not for its row's state: on
// prism a bundle of key 0 alone can move the stage's watermark past key 1's
// records (prism keeps the last bundle's residuals only; the folder source
// works around it with its watermark board, the Pub/Sub source has none), so
// A may come LATE there; Flink and Dataflow hold the watermark for a key not
// yet read. Without the fix no row comes at all.
func TestFewerReaderKeysStillReEmitTheirArchive(t *testing.T) {
	e := newEmulator(t, 10*time.Second)
	dir := t.TempDir()
	old := newPlainReader(t, e, dir)
	st, err := openStore(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	old.st, old.rest = st, newRestriction(1, time.Now().UnixMilli())
	a := e.publish(purchase("A", "2026-11-04T10:15:00Z", "100"))[0]
	old.drain(t)
	if m := e.message(a); m.Acks != 1 {
		t.Fatalf("A: %d acks, want 1", m.Acks)
	}

	job := startStream(t, dir)                            // one reader key
	e.publish(purchase("X", "2026-11-04T11:20:00Z", "1")) // watermark -> 11:10
	job.waitFor(t, "a row for [10:00, 11:00) with A, archived under reader key 1", func() bool {
		return slices.ContainsFunc(job.rows.Values(), func(r model.Row) bool { return r.WindowStart == w10 && r.EventCount == 1 })
	})
	job.stop(t)
}

// The keys the archive holds: its partitions pubsub and pubsub-NN, nothing
// else ("_control", strays, a name PartitionOf does not make).
func TestArchiveKeys(t *testing.T) {
	root := t.TempDir()
	if n, err := archiveKeys(context.Background(), filepath.Join(root, "none")); n != 0 || err != nil {
		t.Errorf("no archive: %d, %v; want 0", n, err)
	}
	for _, d := range []string{"pubsub", "pubsub-03", "pubsub-3", "pubsub-x", "pubsub-00", "_control", "other-07"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := archiveKeys(context.Background(), root); n != 4 || err != nil {
		t.Errorf("archiveKeys = %d, %v; want 4 (pubsub-03)", n, err)
	}
}
