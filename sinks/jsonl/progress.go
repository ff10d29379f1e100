package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/table"
)

// The jsonl sink's progress files (ProgressStore, docs/restart.md) are
// logs: the workers' Write appends checkpoints, the launcher's SealResume
// resume points, and a reader keeps the last line per key.

func (j *JSONL) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	return j.extremeTime(ctx, false, func(r model.Row) (int64, bool) { return r.WindowStart, r.State != model.Final })
}

// RunCheckpoints returns the checkpoints run wrote, the last line of each
// (partition, file): a retried bundle appends its checkpoint again.
func (j *JSONL) RunCheckpoints(_ context.Context, run string) ([]model.Checkpoint, error) {
	rows, err := readJSONLFile(j.dir, fileCheckpoints, table.CheckpointCodec)
	rows = slices.DeleteFunc(rows, func(r table.CheckpointRow) bool { return r.Run != run })
	return lastPer(rows, func(c model.Checkpoint) string { return c.Partition + "\x00" + c.File }), err
}

func (j *JSONL) ResumePoints(context.Context) ([]model.Checkpoint, error) {
	rows, err := readJSONLFile(j.dir, fileResume, table.ResumeCodec)
	return lastPer(rows, func(c model.Checkpoint) string { return c.Partition }), err
}

// lastPer keeps the last checkpoint of each key, ordered by partition, then file.
func lastPer(rows []table.CheckpointRow, key func(model.Checkpoint) string) []model.Checkpoint {
	last := map[string]model.Checkpoint{}
	for _, r := range rows {
		last[key(r.Checkpoint)] = r.Checkpoint
	}
	out := slices.Collect(maps.Values(last))
	rules.SortCheckpoints(out)
	return out
}

// SealResume appends the points that moved to source_resume.jsonl in one
// write and fsyncs it: a sealed point is durable. Only the launcher writes it.
func (j *JSONL) SealResume(ctx context.Context, points []model.Checkpoint) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.readOnly && !j.sealer {
		return fmt.Errorf("jsonl sink %s: opened for reading", j.dir)
	}
	return rules.SealResume(ctx, "jsonl sink "+j.dir, points, j.ResumePoints, func(rows []table.CheckpointRow) error {
		// The rows and audit rows the points cover first: the workers append
		// them without fsync, and a point that survived a power cut they
		// did not would make a restart skip their records for good.
		if err := syncAppended(j.dir); err != nil {
			return fmt.Errorf("jsonl sink %s: seal: %w", j.dir, err)
		}
		var buf bytes.Buffer
		encodeLines(&buf, table.ResumeCodec, rows)
		path := filepath.Join(j.dir, fileResume)
		_, statErr := os.Stat(path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("jsonl sink %s: seal: %w", j.dir, err)
		}
		_, err = f.Write(buf.Bytes())
		if err == nil {
			err = syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && os.IsNotExist(statErr) {
			err = files.SyncDir(j.dir) // a new file's name must survive a power cut too
		}
		if err != nil {
			return fmt.Errorf("jsonl sink %s: seal %s: %w", j.dir, fileResume, err)
		}
		return nil
	})
}

// PruneCheckpoints is a no-op: the workers hold the file open for appending
// and no lock spans their processes, so a rewrite would lose or race with
// their appends. Reads filter by run anyway.
func (j *JSONL) PruneCheckpoints(context.Context, string) error { return nil }

// syncFile is (*os.File).Sync; tests watch it.
var syncFile = (*os.File).Sync

// syncAppended fsyncs the files the workers append to, through handles of
// its own (an fsync writes a file's data whoever wrote it); a missing one is
// skipped.
func syncAppended(dir string) error {
	for _, name := range appendFiles {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = syncFile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", name, err)
		}
	}
	return nil
}
