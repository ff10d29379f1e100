package sinks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// ProgressStore is a sink that keeps folder-source progress, so a restarted
// job re-reads the retention, not the history (docs/restart.md). The workers
// write source_checkpoints (WriteProgress), whose records' outputs may still
// be in flight; the launcher seals source_resume once those are durable, and
// a restart resumes from it alone.
type ProgressStore interface {
	Reader
	// EarliestOpenWindow returns the earliest window_start (epoch ms) of a
	// current row that is not FINAL; ok is false when every row is FINAL.
	EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error)
	// RunCheckpoints returns run's checkpoints by partition, then file.
	RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error)
	// ResumePoints returns the latest sealed resume point of each partition,
	// ordered by partition.
	ResumePoints(ctx context.Context) ([]model.Checkpoint, error)
	// SealResume stores at most one point per partition, replacing the
	// earlier one; storing the same points again changes nothing.
	SealResume(ctx context.Context, points []model.Checkpoint) error
	// PruneCheckpoints deletes the checkpoints of every run but keep.
	PruneCheckpoints(ctx context.Context, keep string) error
}

var (
	_ ProgressStore = (*SQLite)(nil)
	_ ProgressStore = (*BigQuery)(nil)
	_ ProgressStore = (*JSONL)(nil)
)

// OpenProgress opens an existing sink's progress tables for the launcher; ok
// is false as for OpenReader. A jsonl handle writes only source_resume.jsonl.
func OpenProgress(ctx context.Context, spec sink.Spec) (ProgressStore, bool, error) {
	switch spec.Scheme {
	case sink.SchemeSQLite, sink.SchemeBigQuery:
		r, ok, err := OpenReader(ctx, spec)
		if err != nil || !ok {
			return nil, false, err
		}
		return r.(ProgressStore), true, nil
	case sink.SchemeJSONL:
		j, ok, err := openJSONLReader(spec.Path)
		if err != nil || !ok {
			return nil, false, err
		}
		j.sealer = true
		return j, true, nil
	}
	return nil, false, nil
}

// checkResumePoints refuses points with no partition or run, or two points
// for one partition.
func checkResumePoints(points []model.Checkpoint) error {
	seen := make(map[string]bool, len(points))
	for _, p := range points {
		switch {
		case p.Partition == "":
			return fmt.Errorf("seal resume point %s after %q: empty partition", p.Run, p.File)
		case p.Run == "":
			return fmt.Errorf("seal resume point of partition %s: empty run", p.Partition)
		case seen[p.Partition]:
			return fmt.Errorf("seal resume points: partition %s twice", p.Partition)
		}
		seen[p.Partition] = true
	}
	return nil
}

// changedResumePoints returns the points that differ from the stored ones,
// so that sealed_at says when a point was first sealed.
func changedResumePoints(current, points []model.Checkpoint) []model.Checkpoint {
	have := make(map[string]model.Checkpoint, len(current))
	for _, c := range current {
		have[c.Partition] = c
	}
	var out []model.Checkpoint
	for _, p := range points {
		if c, ok := have[p.Partition]; !ok || c != p {
			out = append(out, p)
		}
	}
	return out
}

// sortCheckpoints orders checkpoints by partition, then file.
func sortCheckpoints(cs []model.Checkpoint) {
	slices.SortStableFunc(cs, func(a, b model.Checkpoint) int {
		if c := strings.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return strings.Compare(a.File, b.File)
	})
}
