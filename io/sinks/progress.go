package sinks

import (
	"context"

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
