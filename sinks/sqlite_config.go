package sinks

import (
	"context"
	"database/sql"
	"fmt"
)

// CheckRunConfig refuses a run whose settings differ from those the rows
// were computed with (its keys would collide), and stores keys not yet stored.
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
