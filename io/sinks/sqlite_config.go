package sinks

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/revenue-stream/hourly/model"
)

// Checkpoints returns the stored folder-source checkpoints, by partition,
// then file.
func (s *SQLite) Checkpoints(ctx context.Context) ([]model.Checkpoint, error) {
	rows, err := readTable(ctx, s, checkpointCodec, "read source_checkpoints",
		sqliteSelect(SourceCheckpoints)+` ORDER BY "partition", file`)
	out := make([]model.Checkpoint, len(rows))
	for i, r := range rows {
		out[i] = r.Checkpoint
	}
	return out, err
}

// PruneCheckpoints deletes each named partition's checkpoints for files
// sorting before the given one: a restart resumes at or after it, and so
// will every later one, so the table stays as small as the log a restart
// re-reads rather than growing with the history.
func (s *SQLite) PruneCheckpoints(ctx context.Context, keep map[string]string) error {
	return s.inTx(ctx, "prune source_checkpoints", func(tx *sql.Tx) error {
		for partition, file := range keep {
			if _, err := tx.ExecContext(ctx, `DELETE FROM source_checkpoints WHERE "partition" = ? AND file < ?`, partition, file); err != nil {
				return fmt.Errorf("prune source_checkpoints of %s: %w", partition, err)
			}
		}
		return nil
	})
}

// CheckRunConfig refuses a run whose settings differ from those the file's
// rows were computed with: with another window, say, its window_start keys
// would collide with the stored ones and the revision rules would mix two
// different aggregations. An empty table takes cfg; keys not yet stored are
// added, so a newer build can record more settings.
func (s *SQLite) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	var mismatch error
	err := s.inTx(ctx, "check run_config", func(tx *sql.Tx) error {
		mismatch = nil
		have := map[string]string{}
		rs, err := tx.QueryContext(ctx, `SELECT key, value FROM run_config`)
		if err != nil {
			return fmt.Errorf("read run_config: %w", err)
		}
		for rs.Next() {
			var k, v string
			if err := rs.Scan(&k, &v); err != nil {
				rs.Close()
				return fmt.Errorf("read run_config: %w", err)
			}
			have[k] = v
		}
		if err := rs.Close(); err != nil {
			return fmt.Errorf("read run_config: %w", err)
		}
		if err := rs.Err(); err != nil {
			return fmt.Errorf("read run_config: %w", err)
		}
		added, err := compareRunConfig(s.path, have, cfg)
		if err != nil {
			mismatch = err
			return nil // nothing to write; commit the empty transaction
		}
		entries := make([]configEntry, len(added))
		for i, k := range added {
			entries[i] = configEntry{k, cfg[k]}
		}
		_, err = insertRows(ctx, tx, "INSERT", configCodec, entries)
		return err
	})
	if err != nil {
		return err
	}
	return mismatch
}

// RunConfig returns the stored run settings.
func (s *SQLite) RunConfig(ctx context.Context) (map[string]string, error) {
	rows, err := readTable(ctx, s, configCodec, "read run_config", sqliteSelect(RunConfig))
	if err != nil {
		return nil, err
	}
	return configMap(rows), nil
}
