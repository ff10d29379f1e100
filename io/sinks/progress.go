package sinks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/model"
)

// ProgressStore is a sink that keeps folder-source progress, so that a
// restarted job re-reads the retention and not the history (docs/restart.md):
// SQLite, BigQuery and jsonl.
//
// It holds two tables with two writers:
//
//   - source_checkpoints: facts about the raw log, written by the workers
//     (WriteProgress) as each partition finishes a file, stamped with the
//     run that read it. A checkpoint alone proves nothing about the outputs
//     of the records before it: they may still be in flight.
//   - source_resume: at most one point per partition, written by the
//     launcher (SealResume) only once it has seen every output of the run so
//     far durable (app/launch seal). A restart resumes from these and from
//     nothing else, so a sink write that a crash lost is always re-derived.
type ProgressStore interface {
	Reader
	// EarliestOpenWindow returns the earliest window_start (epoch ms) of a
	// current row that is not FINAL; ok is false when every row is FINAL.
	EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error)
	// RunCheckpoints returns the checkpoints run wrote, one per (partition,
	// file), ordered by partition, then file.
	RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error)
	// ResumePoints returns the latest sealed resume point of each partition,
	// ordered by partition.
	ResumePoints(ctx context.Context) ([]model.Checkpoint, error)
	// SealResume stores resume points (at most one per partition), each
	// replacing its partition's earlier one. Storing the same points again
	// changes nothing.
	SealResume(ctx context.Context, points []model.Checkpoint) error
	// PruneCheckpoints deletes the checkpoints of every run but keep: once
	// a run has sealed, no restart reads another run's checkpoints again.
	PruneCheckpoints(ctx context.Context, keep string) error
}

var (
	_ ProgressStore = (*SQLite)(nil)
	_ ProgressStore = (*BigQuery)(nil)
	_ ProgressStore = (*JSONL)(nil)
)

// OpenProgress opens the progress tables of an existing sink, for the
// launcher: read the checkpoints, seal resume points. ok is false, as for
// OpenReader, for a sink that keeps none (console) and for a SQLite file or
// jsonl directory that does not exist yet. A jsonl handle reads the files
// as they are and writes only source_resume.jsonl (SealResume): the
// workers' appends to the other files are never touched.
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

// checkResumePoints refuses points SealResume cannot store: no partition,
// no run, or two points for one partition (which would win is undefined).
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

// changedResumePoints returns the points that differ from the partition's
// stored one (current, one per partition): sealing the same point again
// must store nothing, so that sealed_at says when a point was first sealed.
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
