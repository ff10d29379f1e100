package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	// Pure-Go SQLite: the default sink must build without cgo.
	_ "modernc.org/sqlite"
)

// SQLite is the embedded default sink (SPEC §5). Several SQLite values, in
// one process or several, may write the same file at once: every write is
// one BEGIN IMMEDIATE transaction, retried on SQLITE_BUSY, and the revision
// rules are evaluated inside it against the committed rows.
type SQLite struct {
	db   *sql.DB
	path string
}

var _ Sink = (*SQLite)(nil)
var _ ConfigChecker = (*SQLite)(nil)

const (
	// busyTimeoutMs is how long SQLite itself waits for another writer's lock
	// before reporting SQLITE_BUSY; inTx then backs off and retries.
	busyTimeoutMs = 10_000
	// maxTxAttempts bounds the retries so a wedged writer elsewhere turns
	// into an error instead of a hang.
	maxTxAttempts = 8
)

// openSQLite opens (creating if needed) the SQLite sink at path: WAL mode so
// readers never block the writer, synchronous=FULL so a committed batch —
// rows and source progress together — survives a power cut, and the schema
// created if missing.
func openSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("sqlite sink: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite sink %s: the path may not contain '?'", path)
	}
	// _txlock=immediate makes every BeginTx a BEGIN IMMEDIATE: the write lock
	// is taken up front, so two writers never both read a key's revision and
	// then race to upsert it, and a busy database fails at BEGIN, where a
	// retry is safe, rather than at the first write.
	dsn := path + "?_txlock=immediate" +
		"&_busy_timeout=" + strconv.Itoa(busyTimeoutMs) +
		"&_journal_mode=WAL&_synchronous=FULL"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite sink %s: open: %w", path, err)
	}
	// One connection per handle: SQLite has one writer anyway, and a single
	// connection keeps this handle's reads ordered after its writes.
	// Concurrency between handles and processes goes through the file lock.
	db.SetMaxOpenConns(1)
	s := &SQLite{db: db, path: path}
	err = s.inTx(ctx, "create schema", func(tx *sql.Tx) error {
		if err := migrateCheckpoints(ctx, tx); err != nil {
			return err
		}
		for _, t := range Tables {
			if _, err := tx.ExecContext(ctx, sqliteDDL(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database; the last connection to close checkpoints the WAL.
func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite sink %s: close: %w", s.path, err)
	}
	return nil
}

// isBusy reports a lock held by another connection (SQLITE_BUSY or
// SQLITE_LOCKED, any extended code): the only errors worth a retry.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
		return false
	}
	return strings.Contains(err.Error(), "database is locked")
}

// inTx runs fn in one BEGIN IMMEDIATE transaction and commits it, retrying the
// whole transaction with jittered exponential backoff while another writer
// holds the lock. fn must therefore be idempotent up to its own transaction:
// it recomputes everything it reports on each attempt.
func (s *SQLite) inTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.tryTx(ctx, fn)
		if err == nil {
			return nil
		}
		if !isBusy(err) || attempt == maxTxAttempts || ctx.Err() != nil {
			return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
		}
		wait := backoff/2 + rand.N(backoff)
		slog.Debug("sqlite sink: database busy, retrying", "path", s.path, "op", what, "attempt", attempt, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sqlite sink %s: %s: %w (after %w)", s.path, what, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (s *SQLite) tryTx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
				slog.Warn("sqlite sink: rollback failed", "err", rbErr)
			}
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
