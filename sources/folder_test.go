package sources

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p0", "000001.jsonl", "x\n")
	put(t, dir, rawlog.RootPartition, "root.jsonl", "x\n")
	empty := t.TempDir()
	file := filepath.Join(dir, "p0", "000001.jsonl")
	good := FolderOptions{Watermark: testPolicy, Event: event.DefaultConfig()}
	with := func(f func(*FolderOptions)) FolderOptions { o := good; f(&o); return o }

	if err := Validate(dir, good); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	ok := with(func(o *FolderOptions) {
		o.Resume = []model.Checkpoint{{Partition: "p0", File: "000001.jsonl", Offset: 2, Line: 1}, {Partition: rawlog.RootPartition, File: "root.jsonl"}}
	})
	if err := Validate(dir, ok); err != nil {
		t.Errorf("valid start positions: %v", err)
	}

	for _, tc := range []struct {
		name, dir string
		o         FolderOptions
		want      string
	}{
		{"empty path", "", good, "empty folder path"},
		{"gcs pattern", "gs://bucket/log*", good, "must not contain"},
		{"other scheme", "hdfs://nn/log", good, "no filesystem serves hdfs://"},
		{"missing", filepath.Join(dir, "nope"), good, "does not exist"},
		{"file", file, good, "not a folder"},
		{"policy", dir, with(func(o *FolderOptions) { o.Watermark.IdleTimeout = 0 }), "--idle-timeout"},
		{"event", dir, with(func(o *FolderOptions) { o.Event = event.Config{} }), "--max-future"},
		{"poll", dir, with(func(o *FolderOptions) { o.PollInterval = -time.Second }), "poll interval"},
		{"per call", dir, with(func(o *FolderOptions) { o.MaxPerCall = -1 }), "records per call"},
		{"replay empty", empty, good, "no partitions yet"},
		{"follow empty", empty, with(func(o *FolderOptions) { o.Follow = true }), "no partitions yet"},
		{"start partition", dir, with(func(o *FolderOptions) { o.Resume = []model.Checkpoint{{Partition: "p9", File: "f"}} }), `no partition "p9"`},
		{"start file", dir, with(func(o *FolderOptions) { o.Resume = []model.Checkpoint{{Partition: "p0", File: ".f"}} }), "want <partition>/<file>"},
		{"start deep", dir, with(func(o *FolderOptions) { o.Resume = []model.Checkpoint{{Partition: "p0", File: "a/b"}} }), "want <partition>/<file>"},
		{"start mark", dir, with(func(o *FolderOptions) { o.Resume = []model.Checkpoint{{Partition: "p0", File: "f", Offset: 5}} }), "invalid mark"},
		{"start twice", dir, with(func(o *FolderOptions) {
			o.Resume = []model.Checkpoint{{Partition: "p0", File: "f"}, {Partition: "p0", File: "g"}}
		}), "name the same partition"},
	} {
		err := Validate(tc.dir, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
}
