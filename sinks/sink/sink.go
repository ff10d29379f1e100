package sink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
)

// Batch is what one firing or reconcile step writes, atomically where the
// sink can (SQLite).
type Batch struct {
	Rows []model.Row
	Audit
	// Progress holds folder-source checkpoints (ProgressStore); no Result
	// field counts them and the console ignores them.
	Progress []model.Checkpoint
}

// Validate refuses rows and audit records no table can key (Check).
func (b Batch) Validate() error {
	return cmp.Or(checkAll(b.Rows), checkAll(b.TooLate), checkAll(b.Conflicts), checkAll(b.Quarantined))
}

func checkAll[T Record](vs []T) error {
	for i := range vs {
		if err := Check(&vs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Check refuses a record no table can key: a row whose state is not
// writable, an audit record without a source_position.
func Check[T Record](v *T) error {
	switch v := any(v).(type) {
	case *model.Row:
		if v.State < model.Early || v.State > model.Final {
			return fmt.Errorf("row %s revision %d: result_state %v is not writable", v.Key(), v.Revision, v.State)
		}
	case *model.TooLate:
		if v.Position == "" {
			return fmt.Errorf("too_late event %q: empty source_position", v.EventID)
		}
	case *model.Conflict:
		if v.Position == "" {
			return fmt.Errorf("conflict event %q: empty source_position", v.EventID)
		}
	case *model.Quarantined:
		if v.Position == "" {
			return fmt.Errorf("quarantined record (%s): empty source_position", v.Reason)
		}
	}
	return nil
}

// Result says what a Write did: rows that became their key's current
// snapshot, rows the revision and no-dip rules refused, and audit rows added
// (a replayed position adds none).
type Result struct {
	Accepted, Stale, AuditInserted int
}

// Sink is an output for pipeline batches. Write is safe for concurrent use.
type Sink interface {
	Write(ctx context.Context, b Batch) (Result, error)
	Close() error
}

// ConfigChecker is implemented by sinks that store the settings their rows
// were computed with (SPEC §5 run_config), to refuse a run whose keys collide.
type ConfigChecker interface {
	CheckRunConfig(ctx context.Context, cfg map[string]string) error
}

// Reader is a sink whose tables can be read back: SQLite, BigQuery and jsonl.
// Each implementation documents only where it differs.
type Reader interface {
	Sink
	// Changelog returns the accepted snapshots q selects, ordered by key then
	// revision, with each one's writer and write time (zero where the sink
	// keeps none: BigQuery's current rows). Unreadable rows are left out and
	// named in an UnreadableRows error returned with the others.
	Changelog(ctx context.Context, q Query) ([]ChangelogEntry, error)
	// FinalHorizon returns the latest window_end (epoch ms) among FINAL rows:
	// on restart every window ending at or before it may already be closed
	// (SPEC §4). ok is false when no row is FINAL yet.
	FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error)
	// Audit returns the audit tables' rows, each ordered by source_position,
	// one per position; a table that cannot be read leaves the others read.
	// Quarantined's Detail comes back empty (SPEC §5 has no column for it).
	Audit(ctx context.Context) (Audit, error)
	// Tally counts every table and returns the latest current rows.
	Tally(ctx context.Context, latest int) (Tally, error)
}

// Query selects the rows of a changelog read: with Current, each key's
// current snapshot (hourly_revenue) only; with From, the windows starting at
// or after it (epoch ms).
type Query struct {
	Current bool
	From    *int64
}

// Rows drops the entries' written_at, passing a read's error on.
func Rows(entries []ChangelogEntry, err error) ([]model.Row, error) {
	if len(entries) == 0 {
		return nil, err
	}
	return slicesx.Map(entries, func(e ChangelogEntry) model.Row { return e.Row }), err
}

// Audit is what the audit tables hold: the records a Batch carries to them.
type Audit struct {
	TooLate     []model.TooLate
	Conflicts   []model.Conflict
	Quarantined []model.Quarantined
}

// Counts is how many records each table of a holds.
func (a Audit) Counts() AuditCounts {
	return AuditCounts{TooLate: int64(len(a.TooLate)), Conflicts: int64(len(a.Conflicts)), Quarantined: int64(len(a.Quarantined))}
}

func (a Audit) Len() int { return len(a.TooLate) + len(a.Conflicts) + len(a.Quarantined) }

// RecentReader is implemented by readers that filter the changelog (Query's
// From), cut the audit tables and count keys where they are stored, so that
// app/live's refresh does not grow with the history; they keep written_at.
// jsonl, which reads its files whole anyway, does not.
type RecentReader interface {
	KeyCount(ctx context.Context) (int64, error)
	AuditCounts(ctx context.Context) (AuditCounts, error)
	// LatestAudit returns the n records of each audit table that arrived
	// last, newest first (app/live's CompareArrival order).
	LatestAudit(ctx context.Context, n int) (Audit, error)
}

// ProgressStore keeps folder-source progress, so a restart re-reads the
// retention, not the history (docs/restart.md): workers write
// source_checkpoints (WriteProgress), whose outputs may be in flight; the
// launcher seals source_resume once they are durable; a restart reads only it.
type ProgressStore interface {
	Reader
	// EarliestOpenWindow returns the earliest window_start (epoch ms) of a
	// current row that is not FINAL; ok is false when every row is FINAL.
	EarliestOpenWindow(ctx context.Context) (windowStartMs int64, ok bool, err error)
	// RunCheckpoints returns run's checkpoints by partition, then file.
	RunCheckpoints(ctx context.Context, run string) ([]model.Checkpoint, error)
	// ResumePoints returns the latest sealed resume point of each partition,
	// ordered by partition.
	ResumePoints(ctx context.Context) ([]model.Checkpoint, error)
	// SealResume stores at most one point per partition, replacing the
	// earlier one; storing the same points again changes nothing.
	SealResume(ctx context.Context, points []model.Checkpoint) error
	// PruneCheckpoints deletes the checkpoints of every run but keep.
	PruneCheckpoints(ctx context.Context, keep string) error
}

// ChangelogEntry is a row of hourly_revenue_changelog: an accepted snapshot
// and when it was accepted (zero where the sink keeps none).
type ChangelogEntry struct {
	model.Row
	WrittenAt time.Time
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

// Tally is what a run's summary shows of a sink, counted where the rows are
// stored: hourly_revenue's rows (one per key) by result state, the other
// tables' rows, and the last current rows in key order.
type Tally struct {
	Current   map[model.ResultState]int64
	Changelog int64
	AuditCounts
	Latest []model.Row
}

// Keys is how many keys hourly_revenue holds.
func (t Tally) Keys() (n int64) {
	for _, c := range t.Current {
		n += c
	}
	return n
}

// AuditCounts is how many rows each audit table holds.
type AuditCounts struct {
	TooLate, Conflicts, Quarantined int64
}

// RowError is a stored row that cannot be read: table, key as stored (if
// it has one), column, why.
type RowError struct {
	Table, Column     string
	WindowStart, Dims string
	Err               error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%s row window_start=%s dims=%s: column %s: %v", e.Table, e.WindowStart, e.Dims, e.Column, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// UnreadableRows is the error of a read that skipped rows it could not read,
// returned with the others; reconcile counts each as unexplained.
type UnreadableRows []*RowError

func (u UnreadableRows) Error() string {
	if len(u) == 1 {
		return u[0].Error()
	}
	return fmt.Sprintf("%s (and %d more unreadable rows)", u[0].Error(), len(u)-1)
}

// Skip adds err to u when it is a *RowError, naming table where it names none, and returns nil;
// any other err is returned as is. A reader calls it per row and returns u.Err() with the rows.
func (u *UnreadableRows) Skip(err error, table string) error {
	re, ok := errors.AsType[*RowError](err)
	if !ok {
		return err
	}
	re.Table = cmp.Or(re.Table, table)
	*u = append(*u, re)
	return nil
}

// Err is u as the error of a read, nil when no row was skipped.
func (u UnreadableRows) Err() error {
	if len(u) == 0 {
		return nil
	}
	return u
}

// Unreadable returns the rows err reports as unreadable, and whether err is
// nothing else (true for nil).
func Unreadable(err error) (UnreadableRows, bool) {
	if err == nil {
		return nil, true
	}
	var u UnreadableRows
	if errors.As(err, &u) {
		return u, true
	}
	return nil, false
}
