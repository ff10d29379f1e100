package sinks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// The SQLite sink's progress tables (ProgressStore, docs/restart.md).

// sqlSealResumeSuffix makes sealing a point replace its partition's stored
// one, unless it is the same point: then the row, sealed_at included, stays
// as it is, so sealing again changes nothing.
var sqlSealResumeSuffix = func() string {
	var cols []string
	for _, c := range SourceResume.Names() {
		if c != "sealed_at" && !containsString(SourceResume.Key, c) {
			cols = append(cols, c)
		}
	}
	excluded := make([]string, len(cols))
	for i, c := range cols {
		excluded[i] = "excluded." + ident(c)
	}
	return sqliteUpsertSuffix(SourceResume) + " WHERE (" + identList("", cols) + ") IS NOT (" + strings.Join(excluded, ", ") + ")"
}()

// RunCheckpoints returns the checkpoints run wrote, by partition, then file
// (the primary key keeps one per run, partition and file).
func (s *SQLite) RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error) {
	rows, err := readTable(ctx, s, checkpointCodec, "read source_checkpoints",
		sqliteSelect(SourceCheckpoints)+` WHERE "run" = ? ORDER BY "partition", "file"`, run)
	return checkpointsOf(rows), err
}

// ResumePoints returns the sealed resume point of each partition, by
// partition.
func (s *SQLite) ResumePoints(ctx context.Context) ([]model.Checkpoint, error) {
	rows, err := readTable(ctx, s, resumeCodec, "read source_resume",
		sqliteSelect(SourceResume)+` ORDER BY "partition"`)
	return checkpointsOf(rows), err
}

// SealResume stores resume points in one transaction, each replacing its
// partition's; a point equal to the stored one is left alone.
func (s *SQLite) SealResume(ctx context.Context, points []model.Checkpoint) error {
	if err := checkResumePoints(points); err != nil {
		return fmt.Errorf("sqlite sink %s: %w", s.path, err)
	}
	if len(points) == 0 {
		return nil
	}
	return s.inTx(ctx, "seal source_resume", func(tx *sql.Tx) error {
		now := time.Now()
		var args, vals []any
		for _, p := range points {
			vals = resumeCodec.put(vals[:0], checkpointRow{Checkpoint: p, At: now})
			args = sqliteArgs(SourceResume, args, vals)
		}
		seal := newBulk(tx, sqliteInsertPrefix("INSERT", SourceResume), sqlSealResumeSuffix, len(SourceResume.Columns))
		defer seal.close()
		if _, err := seal.exec(ctx, args); err != nil {
			return fmt.Errorf("upsert source_resume: %w", err)
		}
		return nil
	})
}

// PruneCheckpoints deletes the checkpoints of every run but keep, so the
// table holds one run's files rather than every run's.
func (s *SQLite) PruneCheckpoints(ctx context.Context, keep string) error {
	return s.inTx(ctx, "prune source_checkpoints", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM source_checkpoints WHERE "run" <> ?`, keep); err != nil {
			return fmt.Errorf("delete other runs' checkpoints: %w", err)
		}
		return nil
	})
}

// migrateCheckpoints brings a source_checkpoints table created by an older
// build (no run column, keyed by partition and file) to today's. Adding the
// column alone (ALTER TABLE ADD COLUMN) would keep the old primary key,
// under which a second run's checkpoint of a file would replace the
// first's: the table is rebuilt instead, in the schema transaction, its old
// rows kept with the empty run (no run seals them: they are facts of the
// log that no restart trusts, and the first prune deletes them).
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
		sqliteDDL(SourceCheckpoints),
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
