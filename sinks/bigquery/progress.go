package bigquery

import (
	"context"

	gbq "cloud.google.com/go/bigquery"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
)

// The BigQuery sink's progress tables (ProgressStore, docs/restart.md):
// source_checkpoints is appended (reads keep one row per run, partition and
// file); source_resume gets one small DML INSERT per seal, of the points that
// moved, and its latest row per partition is the point.

// RunCheckpoints returns the checkpoints run wrote, the latest of each
// (partition, file), by partition, then file.
func (b *BigQuery) RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error) {
	return sqlread.Checkpoints(ctx, b.DB, table.CheckpointCodec, " WHERE `run` = @run"+oncePer("`partition`, `file`", "updated_at DESC, `offset` DESC"),
		gbq.QueryParameter{Name: "run", Value: run})
}

// ResumePoints returns the latest sealed point of each partition, by partition.
func (b *BigQuery) ResumePoints(ctx context.Context) ([]model.Checkpoint, error) {
	return sqlread.Checkpoints(ctx, b.DB, table.ResumeCodec, " WHERE TRUE"+oncePer("`partition`", "sealed_at DESC, `file` DESC, `offset` DESC"))
}

// SealResume inserts the points that differ from their partition's latest
// one, all with one sealed_at, in one statement; the copies a retried
// statement may add are collapsed by the read.
func (b *BigQuery) SealResume(ctx context.Context, points []model.Checkpoint) error {
	return rules.SealResume(ctx, "bigquery sink "+b.String(), points, b.ResumePoints, func(rows []table.CheckpointRow) error {
		cols := bqDialect.Columns(table.SourceResume.Names())
		_, _, err := b.exec(ctx, "seal "+table.SourceResume.Name, `INSERT INTO `+b.table(table.SourceResume.Name)+` (`+cols+`)
SELECT `+cols+` FROM `+unnestRows(table.SourceResume.Name), gbq.QueryParameter{Name: "rows", Value: bqRowsParam(table.ResumeCodec, rows)})
		return err
	})
}

// PruneCheckpoints deletes the checkpoints of every run but keep with one DML
// DELETE (allowed on Storage Write API rows, unlike the insertAll buffer's).
func (b *BigQuery) PruneCheckpoints(ctx context.Context, keep string) error {
	_, _, err := b.exec(ctx, "prune "+table.SourceCheckpoints.Name, `DELETE FROM `+b.table(table.SourceCheckpoints.Name)+" WHERE `run` <> @keep",
		gbq.QueryParameter{Name: "keep", Value: keep})
	return err
}
