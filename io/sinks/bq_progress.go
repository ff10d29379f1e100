package sinks

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/revenue-stream/hourly/model"
)

// The BigQuery sink's progress tables (ProgressStore, docs/restart.md).
// source_checkpoints is append-only (Write, through the Storage Write API):
// a retried bundle appends a checkpoint again, so reads keep one row per
// (run, partition, file). source_resume gets one DML INSERT per seal, and
// only for the partitions whose point moved: a few rows, at most once per
// seal, well inside the DML quotas. Its latest row per partition is the
// point.

// EarliestOpenWindow returns the earliest window_start of a current row
// (the hourly_revenue view) not yet FINAL (see SQLite.EarliestOpenWindow).
func (b *BigQuery) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	return b.readTime(ctx, "read earliest open window", `SELECT MIN(window_start) AS t FROM `+b.table(bqCurrent)+`
WHERE result_state <> 'FINAL'`)
}

// RunCheckpoints returns the checkpoints run wrote, one per (partition,
// file), by partition, then file. Copies appended by retries are the same
// checkpoint; the latest one is kept.
func (b *BigQuery) RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error) {
	rows, err := readBQ(ctx, b, checkpointCodec, "read "+bqCheckpoints, `SELECT `+bqQuotedColumns(SourceCheckpoints)+
		` FROM `+b.table(bqCheckpoints)+" WHERE `run` = @run"+
		oncePer("`partition`, `file`", "updated_at DESC, `offset` DESC"),
		bigquery.QueryParameter{Name: "run", Value: run})
	if err != nil {
		return nil, err
	}
	out := checkpointsOf(rows)
	sortCheckpoints(out)
	return out, nil
}

// ResumePoints returns the latest sealed point of each partition, by
// partition.
func (b *BigQuery) ResumePoints(ctx context.Context) ([]model.Checkpoint, error) {
	rows, err := readBQ(ctx, b, resumeCodec, "read "+bqResume, `SELECT `+bqQuotedColumns(SourceResume)+
		` FROM `+b.table(bqResume)+` WHERE TRUE`+oncePer("`partition`", "sealed_at DESC, `file` DESC, `offset` DESC"))
	if err != nil {
		return nil, err
	}
	out := checkpointsOf(rows)
	sortCheckpoints(out)
	return out, nil
}

// SealResume inserts the points that differ from their partition's latest
// one, all with one sealed_at, in one statement. A retry of a statement
// whose first attempt landed inserts the same rows again, which the read
// collapses: same partition, same sealed_at, same point.
func (b *BigQuery) SealResume(ctx context.Context, points []model.Checkpoint) error {
	if err := checkResumePoints(points); err != nil {
		return fmt.Errorf("bigquery sink %s: %w", b, err)
	}
	current, err := b.ResumePoints(ctx)
	if err != nil {
		return err
	}
	changed := changedResumePoints(current, points)
	if len(changed) == 0 {
		return nil
	}
	now := time.Now().UTC()
	rows := make([]checkpointRow, len(changed))
	for i, p := range changed {
		rows[i] = checkpointRow{Checkpoint: p, At: now}
	}
	cols := bqQuotedColumns(SourceResume)
	_, _, err = b.exec(ctx, "seal "+bqResume, `INSERT INTO `+b.table(bqResume)+` (`+cols+`)
SELECT `+cols+` FROM `+unnestRows(bqResume), bigquery.QueryParameter{Name: "rows", Value: bqRowsParam(resumeCodec, rows)})
	return err
}

// PruneCheckpoints deletes the checkpoints of every run but keep with one
// DML DELETE. BigQuery lets DML delete rows appended through the Storage
// Write API, recent ones included (not those of the legacy insertAll
// streaming buffer, which this sink never uses).
func (b *BigQuery) PruneCheckpoints(ctx context.Context, keep string) error {
	_, _, err := b.exec(ctx, "prune "+bqCheckpoints, `DELETE FROM `+b.table(bqCheckpoints)+" WHERE `run` <> @keep",
		bigquery.QueryParameter{Name: "keep", Value: keep})
	return err
}
