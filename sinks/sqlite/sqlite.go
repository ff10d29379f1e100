package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/sinks/internal/retry"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"

	// Pure-Go SQLite: the default sink must build without cgo.
	_ "modernc.org/sqlite"
)

// SQLite is the embedded default sink. Several handles may write one file:
// every write is a BEGIN IMMEDIATE transaction, retried on SQLITE_BUSY, that
// applies the revision rules to the committed rows.
type SQLite struct {
	sqlread.DB
	db   *sql.DB
	path string
}

var _ sink.Sink = (*SQLite)(nil)
var _ sink.ConfigChecker = (*SQLite)(nil)

const (
	busyTimeoutMs = 10_000 // SQLite's own wait for a lock before SQLITE_BUSY
	maxTxAttempts = 8      // a wedged writer elsewhere is an error, not a hang
)

func init() {
	sink.Register(sink.SchemeSQLite, sink.Backend{
		Open: func(ctx context.Context, spec sink.Spec) (sink.Sink, error) { return Open(ctx, spec.Path) },
		Existing: func(ctx context.Context, spec sink.Spec, _ bool) (sink.Sink, bool, error) {
			if _, err := os.Stat(spec.Path); err != nil {
				if os.IsNotExist(err) {
					return nil, false, nil
				}
				return nil, false, fmt.Errorf("sink %s: %w", spec, err)
			}
			s, err := Open(ctx, spec.Path)
			return s, err == nil, err
		},
	})
}

// Open opens or creates the sink at path, as --sink=sqlite:PATH does: WAL so readers never block
// the writer, synchronous=FULL so a committed batch survives a power cut.
func Open(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("sqlite sink: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite sink %s: the path may not contain '?'", path)
	}
	// BEGIN IMMEDIATE takes the write lock up front: two writers never race
	// on a key's revision, and a busy database fails at BEGIN, safe to retry.
	dsn := path + "?_txlock=immediate" +
		"&_busy_timeout=" + strconv.Itoa(busyTimeoutMs) +
		"&_journal_mode=WAL&_synchronous=FULL"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite sink %s: open: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and reads stay ordered
	// after this handle's writes.
	db.SetMaxOpenConns(1)
	s := &SQLite{db: db, path: path}
	s.DB = sqlread.DB{Rows: s.rows, From: s.from, ReadChangelog: s.changelog, Extreme: s.extremeTime, Dialect: sqliteDialect}
	err = s.inTx(ctx, "create schema", func(tx *sql.Tx) error {
		if err := migrateCheckpoints(ctx, tx); err != nil {
			return err
		}
		for _, t := range table.Tables {
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

func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite sink %s: close: %w", s.path, err)
	}
	return nil
}

// isBusy reports SQLITE_BUSY or SQLITE_LOCKED: the only errors worth a retry.
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

// inTx runs fn in one transaction, retrying it with jittered backoff while
// another writer holds the lock; fn recomputes what it reports each attempt.
func (s *SQLite) inTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	_, err := retry.Retrier{Attempts: maxTxAttempts, Retryable: isBusy,
		Wait: func(attempt int) time.Duration {
			backoff := min(5*time.Millisecond<<(attempt-1), time.Second)
			return backoff/2 + rand.N(backoff)
		},
		Level: slog.LevelDebug, Msg: "sqlite sink: database busy, retrying", Attrs: []any{"path", s.path, "op", what},
	}.Do(ctx, func() error { return s.tryTx(ctx, fn) })
	if err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	return nil
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
