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

	"github.com/revenue-stream/hourly/model"

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

// schema is SPEC §5, column for column. Times are RFC 3339 UTC TEXT and money
// is both an exact decimal string and integer micros, so the file reads well
// in the sqlite3 shell and sums exactly in SQL.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS hourly_revenue (
		window_start   TEXT    NOT NULL,
		window_end     TEXT    NOT NULL,
		dims           TEXT    NOT NULL,
		revenue        TEXT    NOT NULL,
		revenue_micros INTEGER NOT NULL,
		event_count    INTEGER NOT NULL,
		revision       INTEGER NOT NULL,
		result_state   TEXT    NOT NULL,
		PRIMARY KEY (window_start, dims)
	)`,
	`CREATE TABLE IF NOT EXISTS hourly_revenue_changelog (
		window_start   TEXT    NOT NULL,
		window_end     TEXT    NOT NULL,
		dims           TEXT    NOT NULL,
		revenue        TEXT    NOT NULL,
		revenue_micros INTEGER NOT NULL,
		event_count    INTEGER NOT NULL,
		revision       INTEGER NOT NULL,
		result_state   TEXT    NOT NULL,
		written_at     TEXT    NOT NULL,
		writer         TEXT    NOT NULL,
		PRIMARY KEY (window_start, dims, revision)
	)`,
	`CREATE TABLE IF NOT EXISTS too_late_events (
		source_position TEXT NOT NULL PRIMARY KEY,
		event_id        TEXT NOT NULL,
		event_time      TEXT NOT NULL,
		payload         TEXT NOT NULL,
		reason          TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS conflict_events (
		source_position         TEXT NOT NULL PRIMARY KEY,
		event_id                TEXT NOT NULL,
		first_fingerprint       TEXT NOT NULL,
		conflicting_fingerprint TEXT NOT NULL,
		payload                 TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS quarantined_events (
		source_position TEXT NOT NULL PRIMARY KEY,
		payload         TEXT NOT NULL,
		reason          TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS reconcile_diffs (
		run_id                    TEXT    NOT NULL,
		window_start              TEXT    NOT NULL,
		dims                      TEXT    NOT NULL,
		streamed_revenue_micros   INTEGER NOT NULL,
		recomputed_revenue_micros INTEGER NOT NULL,
		delta_micros              INTEGER NOT NULL,
		streamed_count            INTEGER NOT NULL,
		recomputed_count          INTEGER NOT NULL,
		classification            TEXT    NOT NULL,
		applied_revision          INTEGER,
		PRIMARY KEY (run_id, window_start, dims)
	)`,
	`CREATE TABLE IF NOT EXISTS run_config (
		key   TEXT NOT NULL PRIMARY KEY,
		value TEXT NOT NULL
	)`,
	// One row per file a folder-source partition read completely (see
	// model.Checkpoint). "partition" is quoted: it is an SQL keyword.
	`CREATE TABLE IF NOT EXISTS source_checkpoints (
		"partition" TEXT    NOT NULL,
		file        TEXT    NOT NULL,
		offset      INTEGER NOT NULL,
		line        INTEGER NOT NULL,
		max_valid   INTEGER NOT NULL,
		updated_at  TEXT    NOT NULL,
		PRIMARY KEY ("partition", file)
	)`,
}

// OpenSQLite opens (creating if needed) the SQLite sink at path: WAL mode so
// readers never block the writer, synchronous=FULL so a committed batch —
// rows and source progress together — survives a power cut, and the schema
// created if missing.
func OpenSQLite(path string) (*SQLite, error) {
	return openSQLite(context.Background(), path)
}

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
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
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

// Path returns the file the sink writes.
func (s *SQLite) Path() string { return s.path }

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

// wallTime renders processing time for written_at and updated_at: RFC 3339
// UTC with milliseconds.
func wallTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Multi-row statements: each is prefix + tuple repeated (joined by ", ") +
// suffix. Many rows per statement rather than one saves the per-call cost of
// database/sql and the driver (about a fifth of BenchmarkSQLiteWrite's time
// with a per-row loop).
const (
	sqlGetRowsPrefix = `WITH k(window_start, dims) AS (VALUES `
	sqlGetRowsSuffix = `) SELECT h.window_start, h.dims, h.revision, h.result_state, h.event_count
		FROM k JOIN hourly_revenue AS h ON h.window_start = k.window_start AND h.dims = k.dims`
	sqlUpsertRowsPrefix = `INSERT INTO hourly_revenue
		(window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state) VALUES `
	sqlUpsertRowsSuffix = ` ON CONFLICT (window_start, dims) DO UPDATE SET
			window_end = excluded.window_end, revenue = excluded.revenue,
			revenue_micros = excluded.revenue_micros, event_count = excluded.event_count,
			revision = excluded.revision, result_state = excluded.result_state`
	sqlInsertChangelogPrefix = `INSERT INTO hourly_revenue_changelog
		(window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, written_at, writer) VALUES `
	sqlInsertTooLatePrefix = `INSERT OR IGNORE INTO too_late_events
		(source_position, event_id, event_time, payload, reason) VALUES `
	sqlInsertConflictPrefix = `INSERT OR IGNORE INTO conflict_events
		(source_position, event_id, first_fingerprint, conflicting_fingerprint, payload) VALUES `
	sqlInsertQuarantinedPrefix = `INSERT OR IGNORE INTO quarantined_events
		(source_position, payload, reason) VALUES `
	// A checkpoint is deterministic (a retried bundle sends the same one),
	// so replacing it changes nothing but updated_at.
	sqlUpsertCheckpoint = `INSERT OR REPLACE INTO source_checkpoints ("partition", file, offset, line, max_valid, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`
)

// bulkArgs bounds the parameters of one multi-row statement, well under
// SQLite's limit of 32766 host parameters.
const bulkArgs = 960

// bulk executes a multi-row statement over flattened args in chunks. The
// full-size chunk is prepared once per transaction; a shorter last chunk gets
// its own statement.
type bulk struct {
	tx             *sql.Tx
	prefix, suffix string
	width          int // parameters per tuple
	full           *sql.Stmt
}

func newBulk(tx *sql.Tx, prefix, suffix string, width int) *bulk {
	return &bulk{tx: tx, prefix: prefix, suffix: suffix, width: width}
}

func (b *bulk) text(tuples int) string {
	tuple := "(?" + strings.Repeat(", ?", b.width-1) + ")"
	return b.prefix + tuple + strings.Repeat(", "+tuple, tuples-1) + b.suffix
}

func (b *bulk) stmt(ctx context.Context, tuples int) (*sql.Stmt, bool, error) {
	perChunk := bulkArgs / b.width
	if tuples < perChunk {
		st, err := b.tx.PrepareContext(ctx, b.text(tuples))
		return st, true, err
	}
	if b.full == nil {
		st, err := b.tx.PrepareContext(ctx, b.text(perChunk))
		if err != nil {
			return nil, false, err
		}
		b.full = st
	}
	return b.full, false, nil
}

// exec runs the statement over args and returns the rows it changed.
func (b *bulk) exec(ctx context.Context, args []any) (int64, error) {
	var changed int64
	perChunk := bulkArgs / b.width
	for len(args) > 0 {
		n := min(len(args)/b.width, perChunk)
		st, once, err := b.stmt(ctx, n)
		if err != nil {
			return changed, fmt.Errorf("prepare: %w", err)
		}
		res, err := st.ExecContext(ctx, args[:n*b.width]...)
		if once {
			st.Close()
		}
		if err != nil {
			return changed, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return changed, err
		}
		changed += k
		args = args[n*b.width:]
	}
	return changed, nil
}

// query runs the statement over args and calls scan for every result row.
func (b *bulk) query(ctx context.Context, args []any, scan func(*sql.Rows) error) error {
	perChunk := bulkArgs / b.width
	for len(args) > 0 {
		n := min(len(args)/b.width, perChunk)
		st, once, err := b.stmt(ctx, n)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		err = func() error {
			if once {
				defer st.Close()
			}
			rs, err := st.QueryContext(ctx, args[:n*b.width]...)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				if err := scan(rs); err != nil {
					return err
				}
			}
			return rs.Err()
		}()
		if err != nil {
			return err
		}
		args = args[n*b.width:]
	}
	return nil
}

func (b *bulk) close() {
	if b.full != nil {
		b.full.Close()
	}
}

// textKey is a row key as the tables store it.
type textKey struct{ windowStart, dims string }

// Write applies a batch in one transaction: rows that pass the revision and
// no-dip rules are upserted into hourly_revenue and appended to the changelog,
// audit rows are inserted once per source position, and source progress is
// recorded with them, so output and progress can never disagree after a
// crash.
//
// The transaction first reads the stored row of every key in the batch, then
// decides in Go (rows sorted by key and revision, so several snapshots of a
// key apply oldest first), then writes: the upsert gets the last accepted
// snapshot of each key, the changelog every accepted one.
func (s *SQLite) Write(ctx context.Context, b Batch) (Result, error) {
	if err := validateBatch(b); err != nil {
		return Result{}, fmt.Errorf("sqlite sink %s: %w", s.path, err)
	}
	rows := sortedRows(b.Rows)
	keys := make([]textKey, len(rows))
	var lookup []any
	for i, r := range rows {
		keys[i] = textKey{model.FormatTime(r.WindowStart), r.Dims}
		if i == 0 || keys[i] != keys[i-1] {
			lookup = append(lookup, keys[i].windowStart, keys[i].dims)
		}
	}
	var (
		res         Result
		regressions int
		example     string
	)
	err := s.inTx(ctx, "write", func(tx *sql.Tx) error {
		res, regressions, example = Result{}, 0, ""
		now := wallTime(time.Now())

		current := make(map[textKey]stored, len(lookup)/2)
		get := newBulk(tx, sqlGetRowsPrefix, sqlGetRowsSuffix, 2)
		defer get.close()
		err := get.query(ctx, lookup, func(rs *sql.Rows) error {
			var (
				k     textKey
				st    stored
				state string
				err   error
			)
			if err := rs.Scan(&k.windowStart, &k.dims, &st.revision, &state, &st.count); err != nil {
				return err
			}
			if st.state, err = model.ParseResultState(state); err != nil {
				return fmt.Errorf("%s %s: %w", k.windowStart, k.dims, err)
			}
			current[k] = st
			return nil
		})
		if err != nil {
			return fmt.Errorf("read stored rows: %w", err)
		}

		var upserts, changes []any
		last := -1 // index of the last accepted row of the key being walked
		flush := func() {
			if last < 0 {
				return
			}
			r, k := rows[last], keys[last]
			upserts = append(upserts, k.windowStart, model.FormatTime(r.WindowEnd), k.dims,
				model.FormatMicros(r.RevenueMicros), r.RevenueMicros, r.EventCount, r.Revision, r.State.String())
			last = -1
		}
		for i, r := range rows {
			k := keys[i]
			if i > 0 && k != keys[i-1] {
				flush()
			}
			prev, have := current[k]
			switch admit(prev, have, r) {
			case staleRevision:
				res.Stale++
				continue
			case regression:
				res.Stale++
				regressions++
				if example == "" {
					example = fmt.Sprintf("%s revision %d %v count %d over revision %d %v count %d",
						r.Key(), r.Revision, r.State, r.EventCount, prev.revision, prev.state, prev.count)
				}
				continue
			}
			current[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
			last = i
			res.Accepted++
			changes = append(changes, k.windowStart, model.FormatTime(r.WindowEnd), k.dims,
				model.FormatMicros(r.RevenueMicros), r.RevenueMicros, r.EventCount, r.Revision, r.State.String(),
				now, writerOf(r))
		}
		flush()

		upsert := newBulk(tx, sqlUpsertRowsPrefix, sqlUpsertRowsSuffix, 8)
		defer upsert.close()
		if _, err := upsert.exec(ctx, upserts); err != nil {
			return fmt.Errorf("upsert hourly_revenue: %w", err)
		}
		changelog := newBulk(tx, sqlInsertChangelogPrefix, "", 10)
		defer changelog.close()
		if _, err := changelog.exec(ctx, changes); err != nil {
			return fmt.Errorf("insert hourly_revenue_changelog: %w", err)
		}
		if res.AuditInserted, err = writeAudit(ctx, tx, b); err != nil {
			return err
		}
		return writeProgress(ctx, tx, b.Progress, now)
	})
	if err != nil {
		return Result{}, err
	}
	if regressions > 0 {
		// The pipeline should never send these; the sink holding the line is
		// worth a warning, not just a counter.
		slog.Warn("sqlite sink: rejected rows that would lower a count or move a state back",
			"path", s.path, "rows", regressions, "example", example)
	}
	if res.Stale > regressions {
		slog.Debug("sqlite sink: stale revisions ignored", "path", s.path, "rows", res.Stale-regressions)
	}
	return res, nil
}

// writeAudit inserts the batch's audit rows with INSERT OR IGNORE, so a
// position already stored (a replay, a restart, a copy within the batch)
// adds nothing, and counts the rows actually added.
func writeAudit(ctx context.Context, tx *sql.Tx, b Batch) (int, error) {
	var inserted int64
	if len(b.TooLate) > 0 {
		args := make([]any, 0, 5*len(b.TooLate))
		for _, t := range b.TooLate {
			args = append(args, t.Position, t.EventID, model.FormatTime(t.EventTime), string(t.Payload), tooLateReason(t))
		}
		ins := newBulk(tx, sqlInsertTooLatePrefix, "", 5)
		n, err := ins.exec(ctx, args)
		ins.close()
		if err != nil {
			return 0, fmt.Errorf("insert too_late_events: %w", err)
		}
		inserted += n
	}
	if len(b.Conflicts) > 0 {
		args := make([]any, 0, 5*len(b.Conflicts))
		for _, c := range b.Conflicts {
			args = append(args, c.Position, c.EventID, model.FingerprintHex(c.FirstFingerprint),
				model.FingerprintHex(c.ConflictingFingerprint), string(c.Payload))
		}
		ins := newBulk(tx, sqlInsertConflictPrefix, "", 5)
		n, err := ins.exec(ctx, args)
		ins.close()
		if err != nil {
			return 0, fmt.Errorf("insert conflict_events: %w", err)
		}
		inserted += n
	}
	if len(b.Quarantined) > 0 {
		args := make([]any, 0, 3*len(b.Quarantined))
		for _, q := range b.Quarantined {
			args = append(args, q.Position, string(q.Payload), q.Reason)
		}
		ins := newBulk(tx, sqlInsertQuarantinedPrefix, "", 3)
		n, err := ins.exec(ctx, args)
		ins.close()
		if err != nil {
			return 0, fmt.Errorf("insert quarantined_events: %w", err)
		}
		inserted += n
	}
	return int(inserted), nil
}

func writeProgress(ctx context.Context, tx *sql.Tx, progress []model.Checkpoint, now string) error {
	if len(progress) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, sqlUpsertCheckpoint)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer stmt.Close()
	for _, c := range progress {
		if _, err := stmt.ExecContext(ctx, c.Partition, c.File, c.Offset, c.Line, c.MaxValid, now); err != nil {
			return fmt.Errorf("source_checkpoints %s/%s: %w", c.Partition, c.File, err)
		}
	}
	return nil
}

// Checkpoints returns the stored folder-source checkpoints, by partition,
// then file.
func (s *SQLite) Checkpoints(ctx context.Context) ([]model.Checkpoint, error) {
	var out []model.Checkpoint
	err := s.query(ctx, "read source_checkpoints",
		`SELECT "partition", file, offset, line, max_valid FROM source_checkpoints ORDER BY "partition", file`,
		func(rs *sql.Rows) error {
			var c model.Checkpoint
			if err := rs.Scan(&c.Partition, &c.File, &c.Offset, &c.Line, &c.MaxValid); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
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
		for _, k := range added {
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_config (key, value) VALUES (?, ?)`, k, cfg[k]); err != nil {
				return fmt.Errorf("store run_config %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return mismatch
}

// RunConfig returns the stored run settings.
func (s *SQLite) RunConfig(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.query(ctx, "read run_config", `SELECT key, value FROM run_config`, func(rs *sql.Rows) error {
		var k, v string
		if err := rs.Scan(&k, &v); err != nil {
			return err
		}
		out[k] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Diff is one row of reconcile_diffs: how a streamed snapshot differs from a
// recomputation of the raw log.
type Diff struct {
	RunID                   string
	WindowStart             int64 // epoch ms
	Dims                    string
	StreamedRevenueMicros   int64
	RecomputedRevenueMicros int64
	DeltaMicros             int64
	StreamedCount           int64
	RecomputedCount         int64
	// Classification is too_late, missing_window or unexplained.
	Classification string
	// AppliedRevision is the correction's revision under --apply, else nil.
	AppliedRevision *int64
}

// WriteDiffs stores reconcile diffs in one transaction, replacing a row with
// the same (run_id, window_start, dims) so a retried run stays idempotent.
func (s *SQLite) WriteDiffs(ctx context.Context, diffs []Diff) error {
	if len(diffs) == 0 {
		return nil
	}
	return s.inTx(ctx, "write reconcile_diffs", func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO reconcile_diffs
			(run_id, window_start, dims, streamed_revenue_micros, recomputed_revenue_micros, delta_micros,
			 streamed_count, recomputed_count, classification, applied_revision)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, window_start, dims) DO UPDATE SET
				streamed_revenue_micros = excluded.streamed_revenue_micros,
				recomputed_revenue_micros = excluded.recomputed_revenue_micros,
				delta_micros = excluded.delta_micros, streamed_count = excluded.streamed_count,
				recomputed_count = excluded.recomputed_count, classification = excluded.classification,
				applied_revision = excluded.applied_revision`)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer stmt.Close()
		for _, d := range diffs {
			var applied any // NULL unless --apply wrote a correction
			if d.AppliedRevision != nil {
				applied = *d.AppliedRevision
			}
			_, err := stmt.ExecContext(ctx, d.RunID, model.FormatTime(d.WindowStart), d.Dims,
				d.StreamedRevenueMicros, d.RecomputedRevenueMicros, d.DeltaMicros,
				d.StreamedCount, d.RecomputedCount, d.Classification, applied)
			if err != nil {
				return fmt.Errorf("upsert diff %s %s %s: %w", d.RunID, model.FormatTime(d.WindowStart), d.Dims, err)
			}
		}
		return nil
	})
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (s *SQLite) Diffs(ctx context.Context) ([]Diff, error) {
	var out []Diff
	err := s.query(ctx, "read reconcile_diffs", `SELECT run_id, window_start, dims, streamed_revenue_micros,
		recomputed_revenue_micros, delta_micros, streamed_count, recomputed_count, classification, applied_revision
		FROM reconcile_diffs`, func(rs *sql.Rows) error {
		var (
			d       Diff
			ws      string
			applied sql.NullInt64
		)
		if err := rs.Scan(&d.RunID, &ws, &d.Dims, &d.StreamedRevenueMicros, &d.RecomputedRevenueMicros,
			&d.DeltaMicros, &d.StreamedCount, &d.RecomputedCount, &d.Classification, &applied); err != nil {
			return err
		}
		var err error
		if d.WindowStart, err = parseTime(ws); err != nil {
			return err
		}
		if applied.Valid {
			v := applied.Int64
			d.AppliedRevision = &v
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortDiffs(out)
	return out, nil
}

// CurrentRows returns the current snapshot of every key, ordered by
// window_start then dims, with the writer of the stored revision.
func (s *SQLite) CurrentRows(ctx context.Context) ([]model.Row, error) {
	rows, err := s.readRows(ctx, "read hourly_revenue", `SELECT h.window_start, h.window_end, h.dims,
		h.revenue_micros, h.event_count, h.revision, h.result_state, COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision`)
	if err != nil {
		return nil, err
	}
	return sortedRows(rows), nil
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms): the primary key's index on window_start serves
// the range, so a restarted job's seed (Published) reads what it can still
// reach, not the whole history.
func (s *SQLite) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	rows, err := s.readRows(ctx, "read hourly_revenue", `SELECT h.window_start, h.window_end, h.dims,
		h.revenue_micros, h.event_count, h.revision, h.result_state, COALESCE(c.writer, '')
		FROM hourly_revenue h LEFT JOIN hourly_revenue_changelog c
		ON c.window_start = h.window_start AND c.dims = h.dims AND c.revision = h.revision
		WHERE h.window_start >= ?`, secondPrefix(windowStart))
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if r.WindowStart >= windowStart { // the TEXT range is only a pre-filter
			out = append(out, r)
		}
	}
	return sortedRows(out), nil
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (s *SQLite) Changelog(ctx context.Context) ([]model.Row, error) {
	rows, err := s.readRows(ctx, "read hourly_revenue_changelog", `SELECT window_start, window_end, dims,
		revenue_micros, event_count, revision, result_state, writer FROM hourly_revenue_changelog`)
	if err != nil {
		return nil, err
	}
	return sortedRows(rows), nil
}

// readRows scans snapshot rows. Ordering happens in Go on the parsed times:
// TEXT order puts "10:00:00.500Z" before "10:00:00Z".
func (s *SQLite) readRows(ctx context.Context, what, query string, args ...any) ([]model.Row, error) {
	var out []model.Row
	err := s.query(ctx, what, query, func(rs *sql.Rows) error {
		var (
			r             model.Row
			ws, we, state string
			err           error
		)
		if err := rs.Scan(&ws, &we, &r.Dims, &r.RevenueMicros, &r.EventCount, &r.Revision, &state, &r.Writer); err != nil {
			return err
		}
		if r.WindowStart, err = parseTime(ws); err != nil {
			return err
		}
		if r.WindowEnd, err = parseTime(we); err != nil {
			return err
		}
		if r.State, err = model.ParseResultState(state); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	}, args...)
	return out, err
}

// TooLate returns the too_late_events rows ordered by source_position.
func (s *SQLite) TooLate(ctx context.Context) ([]model.TooLate, error) {
	var out []model.TooLate
	err := s.query(ctx, "read too_late_events", `SELECT source_position, event_id, event_time, payload, reason
		FROM too_late_events ORDER BY source_position`, func(rs *sql.Rows) error {
		var (
			t       model.TooLate
			et, pay string
			err     error
		)
		if err := rs.Scan(&t.Position, &t.EventID, &et, &pay, &t.Reason); err != nil {
			return err
		}
		if t.EventTime, err = parseTime(et); err != nil {
			return err
		}
		t.Payload = []byte(pay)
		out = append(out, t)
		return nil
	})
	return out, err
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (s *SQLite) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	var out []model.Conflict
	err := s.query(ctx, "read conflict_events", `SELECT source_position, event_id, first_fingerprint,
		conflicting_fingerprint, payload FROM conflict_events ORDER BY source_position`, func(rs *sql.Rows) error {
		var (
			c                 model.Conflict
			first, confl, pay string
			err               error
		)
		if err := rs.Scan(&c.Position, &c.EventID, &first, &confl, &pay); err != nil {
			return err
		}
		if c.FirstFingerprint, err = strconv.ParseUint(first, 16, 64); err != nil {
			return fmt.Errorf("first_fingerprint %q: %w", first, err)
		}
		if c.ConflictingFingerprint, err = strconv.ParseUint(confl, 16, 64); err != nil {
			return fmt.Errorf("conflicting_fingerprint %q: %w", confl, err)
		}
		c.Payload = []byte(pay)
		out = append(out, c)
		return nil
	})
	return out, err
}

// Quarantined returns the quarantined_events rows ordered by source_position.
// Detail is not stored (SPEC §5 has no column for it) and comes back empty.
func (s *SQLite) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	var out []model.Quarantined
	err := s.query(ctx, "read quarantined_events", `SELECT source_position, payload, reason
		FROM quarantined_events ORDER BY source_position`, func(rs *sql.Rows) error {
		var (
			q   model.Quarantined
			pay string
		)
		if err := rs.Scan(&q.Position, &pay, &q.Reason); err != nil {
			return err
		}
		q.Payload = []byte(pay)
		out = append(out, q)
		return nil
	})
	return out, err
}

// FinalHorizon returns the latest window_end (epoch ms) among FINAL rows: on
// restart every window ending at or before it may already be closed (SPEC §4,
// "windows that the sink already holds as FINAL are closed too"). ok is false
// when no row is FINAL yet.
func (s *SQLite) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	// MAX over TEXT would misorder millisecond bounds, so compare parsed times.
	err = s.query(ctx, "read final horizon", `SELECT DISTINCT window_end FROM hourly_revenue
		WHERE result_state = 'FINAL'`, func(rs *sql.Rows) error {
		var we string
		if err := rs.Scan(&we); err != nil {
			return err
		}
		ms, err := parseTime(we)
		if err != nil {
			return err
		}
		if !ok || ms > windowEndMs {
			windowEndMs, ok = ms, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return windowEndMs, ok, nil
}

// EarliestOpenWindow returns the earliest window_start (epoch ms) among
// rows not yet FINAL: every window starting before it that has rows is
// FINAL. ok is false when every row is FINAL (or there are none).
func (s *SQLite) EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error) {
	// As in FinalHorizon, compare parsed times, not TEXT.
	err = s.query(ctx, "read earliest open window", `SELECT DISTINCT window_start FROM hourly_revenue
		WHERE result_state <> 'FINAL'`, func(rs *sql.Rows) error {
		var ws string
		if err := rs.Scan(&ws); err != nil {
			return err
		}
		ms, err := parseTime(ws)
		if err != nil {
			return err
		}
		if !ok || ms < windowStartMs {
			windowStartMs, ok = ms, true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return windowStartMs, ok, nil
}

// query runs a read and calls scan for each row.
func (s *SQLite) query(ctx context.Context, what, query string, scan func(*sql.Rows) error, args ...any) error {
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("sqlite sink %s: %s: %w", s.path, what, err)
	}
	return nil
}

// parseTime is the inverse of model.FormatTime.
func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: %w", s, err)
	}
	return t.UnixMilli(), nil
}
