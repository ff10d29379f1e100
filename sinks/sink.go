// Package sinks writes the pipeline's outputs (snapshot rows and the three
// audit streams) to SQLite (the default), JSONL, the console or BigQuery
// (SPEC §5), enforcing SPEC §4's revision rules as the last line of defence.
package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Batch is what one firing or reconcile step writes, atomically where the
// sink can (SQLite).
type Batch struct {
	Rows        []model.Row
	TooLate     []model.TooLate
	Conflicts   []model.Conflict
	Quarantined []model.Quarantined
	// Progress holds folder-source checkpoints for source_checkpoints (see
	// ProgressStore); the console ignores them, and no Result field counts them.
	Progress []model.Checkpoint
}

// Result says what a Write did.
type Result struct {
	// Accepted counts rows that became the current snapshot of their key.
	Accepted int
	// Stale counts rows refused by the revision and no-dip rules (admit).
	Stale int
	// AuditInserted counts audit rows added; a replayed position adds none.
	AuditInserted int
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
type Reader interface {
	Sink
	CurrentRows(ctx context.Context) ([]model.Row, error)
	Changelog(ctx context.Context) ([]model.Row, error)
	FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error)
	TooLate(ctx context.Context) ([]model.TooLate, error)
	Conflicts(ctx context.Context) ([]model.Conflict, error)
	Quarantined(ctx context.Context) ([]model.Quarantined, error)
	// Tally counts every table and returns the latest current rows.
	Tally(ctx context.Context, latest int) (Tally, error)
}

// RecentReader is implemented by readers that filter the changelog and count
// keys where they are stored, so that app/live's refresh does not grow with
// the history. jsonl, which reads its files whole anyway, does not.
type RecentReader interface {
	// ChangelogFrom is Changelog limited to windows starting at or after
	// windowStart (epoch ms).
	ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
	KeyCount(ctx context.Context) (int64, error)
}

var (
	_ RecentReader = (*SQLite)(nil)
	_ RecentReader = (*BigQuery)(nil)
)

// OpenReader opens an existing readable sink. ok is false for the console and
// for a SQLite file or jsonl directory that does not exist yet. A jsonl reader
// cannot write.
func OpenReader(ctx context.Context, spec sink.Spec) (r Reader, ok bool, err error) {
	switch spec.Scheme {
	case sink.SchemeSQLite:
		if _, err := os.Stat(spec.Path); err != nil {
			if os.IsNotExist(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("sink %s: %w", spec, err)
		}
		return opened(openSQLite(ctx, spec.Path))
	case sink.SchemeJSONL:
		j, ok, err := openJSONLReader(spec.Path)
		if err != nil || !ok {
			return nil, false, err
		}
		return j, true, nil
	case sink.SchemeBigQuery:
		return opened(OpenBigQuery(ctx, spec))
	}
	return nil, false, nil
}

// opened and asSink return a nil interface, never a typed nil, with an error.
func opened[R Reader](r R, err error) (Reader, bool, error) {
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

func asSink[S Sink](s S, err error) (Sink, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

func init() {
	// sink.Published reads a restarted run's seeds through these, in every
	// process of a binary that imports this package.
	for _, scheme := range []string{sink.SchemeSQLite, sink.SchemeJSONL, sink.SchemeConsole, sink.SchemeBigQuery} {
		sink.Register(scheme, openCurrent)
	}
}

// openCurrent is OpenReader as a sink.Opener.
func openCurrent(ctx context.Context, spec sink.Spec) (sink.CurrentReader, bool, error) {
	r, ok, err := OpenReader(ctx, spec)
	if err != nil || !ok {
		return nil, false, err // never a typed nil inside the interface
	}
	return r, true, nil
}

// Open opens the sink a Spec names. The console sink writes to os.Stdout.
func Open(ctx context.Context, spec sink.Spec) (Sink, error) {
	switch spec.Scheme {
	case sink.SchemeSQLite:
		return asSink(openSQLite(ctx, spec.Path))
	case sink.SchemeJSONL:
		return asSink(OpenJSONL(spec.Path))
	case sink.SchemeConsole:
		return NewConsole(os.Stdout), nil
	case sink.SchemeBigQuery:
		return asSink(OpenBigQuery(ctx, spec))
	}
	return nil, fmt.Errorf("sink %q: unknown scheme: want %s", spec.Scheme, sink.Forms)
}

// writerStream is the Writer of rows the streaming job produces.
const writerStream = "stream"

func writerOf(r model.Row) string {
	if r.Writer == "" {
		return writerStream
	}
	return r.Writer
}

// isReconcile reports a reconcile correction, the one writer SPEC §4 allows
// to lower a count.
func isReconcile(r model.Row) bool { return strings.HasPrefix(r.Writer, "reconcile:") }

// stored is what admit needs of a key's current row.
type stored struct {
	revision int64
	state    model.ResultState
	count    int64
}

// verdict is the outcome of admit.
type verdict uint8

const (
	accept        verdict = iota
	staleRevision         // the stored revision is >= the row's: a replay
	regression            // a higher revision moving the state back or the count down; sinks log it
)

// admit applies SPEC §4 to a row against its key's stored row: only a higher
// revision replaces it, and it may not move the state back (FINAL stays FINAL)
// nor, unless it is a reconcile correction, lower the event count.
func admit(prev stored, have bool, r model.Row) verdict {
	if !have {
		return accept
	}
	if r.Revision <= prev.revision {
		return staleRevision
	}
	if r.State < prev.state {
		return regression
	}
	if !isReconcile(r) && r.EventCount < prev.count {
		return regression
	}
	return accept
}

// refusals tallies the rows admit refuses, with one regression as an example
// for the sink's warning.
type refusals struct {
	stale, regressions int
	example            string
}

// admit reports whether admit accepts r, tallying a refusal.
func (f *refusals) admit(prev stored, have bool, r model.Row) bool {
	switch admit(prev, have, r) {
	case accept:
		return true
	case regression:
		f.regressions++
		if f.example == "" {
			f.example = fmt.Sprintf("%s revision %d %v count %d over revision %d %v count %d",
				r.Key(), r.Revision, r.State, r.EventCount, prev.revision, prev.state, prev.count)
		}
	}
	f.stale++
	return false
}

// admitAll admits rows in key and revision order, each against its key's
// last accepted row, else its stored one, and returns the accepted rows and
// each key's last.
func (f *refusals) admitAll(rows []model.Row, have map[rowKey]stored) ([]model.Row, map[rowKey]stored) {
	var accepted []model.Row
	latest := map[rowKey]stored{}
	for _, r := range sortedRows(rows) {
		k := rowKey{r.WindowStart, r.Dims}
		prev, ok := latest[k]
		if !ok {
			prev, ok = have[k]
		}
		if f.admit(prev, ok, r) {
			latest[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
			accepted = append(accepted, r)
		}
	}
	return accepted, latest
}

// warn logs the regressions refused, if any, as the sink named.
func (f *refusals) warn(sinkName string, attrs ...any) {
	if f.regressions > 0 {
		slog.Warn(sinkName+": rejected rows that would lower a count or move a state back",
			append(attrs, "rows", f.regressions, "example", f.example)...)
	}
}

// sameKey reports whether two rows have one key.
func sameKey(a, b model.Row) bool { return a.WindowStart == b.WindowStart && a.Dims == b.Dims }

// retrier retries an operation that may fail for a while.
type retrier struct {
	attempts  int
	retryable func(error) bool // nil: every error
	wait      func(attempt int) time.Duration
	sleep     func(context.Context, time.Duration) error // nil: sleepCtx
	// Each retry is logged at level as msg, attrs, then the attempt.
	level slog.Level
	msg   string
	attrs []any
}

// do calls try until it succeeds, fails with an error r.retryable refuses or
// has been called r.attempts times, and returns the calls made and the last
// error; when ctx ends during a wait, ctx's error after it.
func (r retrier) do(ctx context.Context, try func() error) (int, error) {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || attempt >= r.attempts || r.retryable != nil && !r.retryable(err) {
			return attempt, err
		}
		wait, sleep := r.wait(attempt), r.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		slog.Log(ctx, r.level, r.msg, slices.Concat(r.attrs, []any{"attempt", attempt, "wait", wait, "err", err})...)
		if serr := sleep(ctx, wait); serr != nil {
			return attempt, fmt.Errorf("%w (after %w)", serr, err)
		}
	}
}

// quadratic waits attempt² × 200 ms.
func quadratic(attempt int) time.Duration {
	return time.Duration(attempt*attempt) * 200 * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// validateBatch refuses rows and audit records no table can key.
func validateBatch(b Batch) error {
	for _, r := range b.Rows {
		if r.State < model.Early || r.State > model.Final {
			return fmt.Errorf("row %s revision %d: result_state %v is not writable", r.Key(), r.Revision, r.State)
		}
	}
	for _, t := range b.TooLate {
		if t.Position == "" {
			return fmt.Errorf("too_late event %q: empty source_position", t.EventID)
		}
	}
	for _, c := range b.Conflicts {
		if c.Position == "" {
			return fmt.Errorf("conflict event %q: empty source_position", c.EventID)
		}
	}
	for _, q := range b.Quarantined {
		if q.Position == "" {
			return fmt.Errorf("quarantined record (%s): empty source_position", q.Reason)
		}
	}
	return nil
}

// sortedRows returns rows ordered by key, then revision: a key's snapshots
// apply oldest first.
func sortedRows(rows []model.Row) []model.Row {
	out := append([]model.Row(nil), rows...)
	slices.SortStableFunc(out, model.CompareRows)
	return out
}

// tooLateReason defaults the reason: window_closed is the only one (SPEC §5).
func tooLateReason(t model.TooLate) string {
	if t.Reason == "" {
		return model.ReasonWindowClosed
	}
	return t.Reason
}

// rowKey identifies a key without building a string for it.
type rowKey struct {
	windowStart int64
	dims        string
}

// memGuard keeps the revision and audit-once rules in memory for the sinks
// with no database (jsonl, console). Its owner holds a lock. Decisions are
// staged and committed once the output is written, so a failed write does not
// make the guard run ahead of it.
type memGuard struct {
	latest map[rowKey]stored
	audit  map[string]struct{} // "<table>\x00<source_position>"
}

func newMemGuard() *memGuard {
	return &memGuard{latest: map[rowKey]stored{}, audit: map[string]struct{}{}}
}

// guardStage is one batch's staged decisions.
type guardStage struct {
	g       *memGuard
	latest  map[rowKey]stored
	audit   map[string]struct{}
	refused refusals
}

func (g *memGuard) stage() *guardStage {
	return &guardStage{g: g, latest: map[rowKey]stored{}, audit: map[string]struct{}{}}
}

// admitRows returns the accepted rows in application order.
func (st *guardStage) admitRows(rows []model.Row) []model.Row {
	accepted, latest := st.refused.admitAll(rows, st.g.latest)
	st.latest = latest
	return accepted
}

// newAudit reports whether position is new under table, staging it if so.
func (st *guardStage) newAudit(table, position string) bool {
	k := table + "\x00" + position
	if _, seen := st.g.audit[k]; seen {
		return false
	}
	if _, seen := st.audit[k]; seen {
		return false
	}
	st.audit[k] = struct{}{}
	return true
}

// commit makes the staged decisions permanent.
func (st *guardStage) commit() {
	for k, v := range st.latest {
		st.g.latest[k] = v
	}
	for k := range st.audit {
		st.g.audit[k] = struct{}{}
	}
}

// observe records a row already in durable output (a reopened JSONL file).
func (g *memGuard) observe(r model.Row) {
	k := rowKey{r.WindowStart, r.Dims}
	if prev, ok := g.latest[k]; ok && prev.revision >= r.Revision {
		return
	}
	g.latest[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
}

// compareRunConfig checks requested settings against stored ones and returns,
// sorted, the keys to add.
func compareRunConfig(sinkName string, have, want map[string]string) ([]string, error) {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var had, asked, added []string
	for _, k := range keys {
		v, ok := have[k]
		switch {
		case !ok:
			added = append(added, k)
		case v != want[k]:
			had = append(had, k+"="+v)
			asked = append(asked, k+"="+want[k])
		}
	}
	if len(had) > 0 {
		return nil, fmt.Errorf("sink %s was written with %s; this run has %s: its window_start keys would collide; use another sink",
			sinkName, strings.Join(had, ", "), strings.Join(asked, ", "))
	}
	return added, nil
}

// sortDiffs orders reconcile diffs by run, window and dims.
func sortDiffs(out []Diff) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.RunID != b.RunID {
			return a.RunID < b.RunID
		}
		if a.WindowStart != b.WindowStart {
			return a.WindowStart < b.WindowStart
		}
		return a.Dims < b.Dims
	})
}
