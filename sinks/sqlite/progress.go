package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
)

// The SQLite sink's progress tables (ProgressStore, docs/restart.md).

func (s *SQLite) RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error) {
	return sqlread.Checkpoints(ctx, s.DB, table.CheckpointCodec, ` WHERE "run" = ? ORDER BY "partition", "file"`, run)
}

func (s *SQLite) ResumePoints(ctx context.Context) ([]model.Checkpoint, error) {
	return sqlread.Checkpoints(ctx, s.DB, table.ResumeCodec, ` ORDER BY "partition"`)
}

// SealResume replaces, in one transaction, each partition's point that moved.
func (s *SQLite) SealResume(ctx context.Context, points []model.Checkpoint) error {
	return rules.SealResume(ctx, "sqlite sink "+s.path, points, s.ResumePoints, func(rows []table.CheckpointRow) error {
		return s.inTx(ctx, "seal source_resume", func(tx *sql.Tx) error {
			_, err := insertRows(ctx, tx, "INSERT", sqliteUpsertSuffix(table.SourceResume), table.ResumeCodec, rows)
			return err
		})
	})
}

func (s *SQLite) PruneCheckpoints(ctx context.Context, keep string) error {
	return s.inTx(ctx, "prune source_checkpoints", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM source_checkpoints WHERE "run" <> ?`, keep); err != nil {
			return fmt.Errorf("delete other runs' checkpoints: %w", err)
		}
		return nil
	})
}

// migrateCheckpoints rebuilds an older build's source_checkpoints (no run
// column) with the run in its key, which ADD COLUMN cannot change; old rows
// get the empty run, which no restart trusts and the first prune deletes.
func migrateCheckpoints(ctx context.Context, tx *sql.Tx) error {
	var columns, withRun int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN name = 'run' THEN 1 END)
		FROM pragma_table_info('source_checkpoints')`).Scan(&columns, &withRun)
	if err != nil {
		return fmt.Errorf("inspect source_checkpoints: %w", err)
	}
	if columns == 0 || withRun > 0 {
		return nil // not created yet, or current
	}
	old := []string{"partition", "file", "offset", "line", "max_valid"}
	for _, stmt := range []string{
		`ALTER TABLE source_checkpoints RENAME TO source_checkpoints_v1`,
		sqliteDDL(table.SourceCheckpoints),
		`INSERT INTO source_checkpoints (` + identList("", append(old, "run", "updated_at")) + `)
			SELECT ` + identList("", old) + `, '', "updated_at" FROM source_checkpoints_v1`,
		`DROP TABLE source_checkpoints_v1`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrate source_checkpoints (add run): %w", err)
		}
	}
	return nil
}
