// Package sinks writes the pipeline's outputs — versioned snapshot rows and
// the three audit streams — to the places SPEC §5 names: an embedded SQLite
// file (the default), JSONL files and the console for debugging, and BigQuery.
//
// Apart from the Beam verbs (Write, WriteProgress in beamio.go) it is plain
// Go: a DoFn (or reconcile, or a test) hands it a Batch and the sink
// decides, transactionally, which rows win. The revision rules of SPEC §4
// live here as the last line of defence, because a replayed bundle, a
// restarted job or a second writer can always deliver an older snapshot
// after a newer one.
package sinks

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/model"
)

// Batch is everything one firing (or one reconcile step) wants written. A
// sink applies a whole Batch atomically where it can (SQLite), so a crash
// never leaves half of a firing behind.
type Batch struct {
	Rows        []model.Row
	TooLate     []model.TooLate
	Conflicts   []model.Conflict
	Quarantined []model.Quarantined
	// Progress holds folder-source checkpoints (one per file read
	// completely, Run set) for source_checkpoints (see ProgressStore); the
	// console sink ignores them. They count in no Result field.
	Progress []model.Checkpoint
}

// Result says what a Write did.
type Result struct {
	// Accepted counts rows that became the current snapshot of their key.
	Accepted int
	// Stale counts rows rejected because the stored revision is >= theirs,
	// or (stream rows only) because they would make a key's state go back or
	// its count fall.
	Stale int
	// AuditInserted counts audit rows actually added; a replayed position
	// adds nothing.
	AuditInserted int
}

// Sink is an output for pipeline batches. Write is safe for concurrent use.
type Sink interface {
	Write(ctx context.Context, b Batch) (Result, error)
	Close() error
}

// ConfigChecker is implemented by sinks that persist the settings their rows
// were computed with (SPEC §5 run_config), so a run with a different window
// or different dimensions is refused before it writes colliding keys.
type ConfigChecker interface {
	CheckRunConfig(ctx context.Context, cfg map[string]string) error
}

// Reader is a sink whose tables can be read back: SQLite, BigQuery and
// jsonl. The run summary and report, a restarted job's seeds, the live view
// and reconcile read through it.
type Reader interface {
	Sink
	CurrentRows(ctx context.Context) ([]model.Row, error)
	Changelog(ctx context.Context) ([]model.Row, error)
	FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error)
	TooLate(ctx context.Context) ([]model.TooLate, error)
	Conflicts(ctx context.Context) ([]model.Conflict, error)
	Quarantined(ctx context.Context) ([]model.Quarantined, error)
	// Tally counts every table and returns the latest current rows, for a
	// run's summary.
	Tally(ctx context.Context, latest int) (Tally, error)
}

var (
	_ Reader = (*SQLite)(nil)
	_ Reader = (*BigQuery)(nil)
)

// RecentReader is implemented by readers that read part of the changelog
// where it is stored (an index range, a partition filter) and count keys
// there: what a view refreshed every few seconds reads, so that a refresh
// does not grow with the history (app/live). The jsonl debug sink, which
// reads its files whole anyway, does not implement it.
type RecentReader interface {
	// ChangelogFrom is Changelog limited to windows starting at or after
	// windowStart (epoch ms).
	ChangelogFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
	// KeyCount is how many (window, dims) keys the sink holds.
	KeyCount(ctx context.Context) (int64, error)
}

var (
	_ RecentReader = (*SQLite)(nil)
	_ RecentReader = (*BigQuery)(nil)
)

// OpenReader opens an existing readable sink. ok is false for a sink that
// keeps nothing to read back (console) or a SQLite file or jsonl directory
// that does not exist yet: opening would create an empty one. A jsonl
// reader reads the files as they are and cannot write.
func OpenReader(ctx context.Context, spec sink.Spec) (r Reader, ok bool, err error) {
	switch spec.Scheme {
	case sink.SchemeSQLite:
		if _, err := os.Stat(spec.Path); err != nil {
			if os.IsNotExist(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("sink %s: %w", spec, err)
		}
		s, err := openSQLite(ctx, spec.Path)
		if err != nil {
			return nil, false, err
		}
		return s, true, nil
	case sink.SchemeJSONL:
		j, ok, err := openJSONLReader(spec.Path)
		if err != nil || !ok {
			return nil, false, err
		}
		return j, true, nil
	case sink.SchemeBigQuery:
		s, err := OpenBigQuery(ctx, spec)
		if err != nil {
			return nil, false, err
		}
		return s, true, nil
	}
	return nil, false, nil
}

func init() {
	// Published (package sink) reads a restarted run's seed rows through
	// these: every process of a binary that imports this package, its
	// workers included, can read back each scheme ParseSpec accepts.
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
		s, err := openSQLite(ctx, spec.Path)
		if err != nil {
			return nil, err // never a typed nil inside the interface
		}
		return s, nil
	case sink.SchemeJSONL:
		s, err := OpenJSONL(spec.Path)
		if err != nil {
			return nil, err
		}
		return s, nil
	case sink.SchemeConsole:
		return NewConsole(os.Stdout), nil
	case sink.SchemeBigQuery:
		s, err := OpenBigQuery(ctx, spec)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("sink %q: unknown scheme: want %s", spec.Scheme, sink.Forms)
}

// writerStream is the Writer of rows the streaming job produces.
const writerStream = "stream"

// writerOf returns the row's writer, "stream" when unset.
func writerOf(r model.Row) string {
	if r.Writer == "" {
		return writerStream
	}
	return r.Writer
}

// isReconcile reports whether the row is a reconcile correction, the one
// writer SPEC §4 allows to lower a count.
func isReconcile(r model.Row) bool { return strings.HasPrefix(r.Writer, "reconcile:") }

// stored is what the admission rule needs to know about a key's current row.
type stored struct {
	revision int64
	state    model.ResultState
	count    int64
}

// verdict is the outcome of admit.
type verdict uint8

const (
	accept verdict = iota
	// staleRevision: the stored revision is >= the row's (an ordinary replay).
	staleRevision
	// regression: a higher revision that would make the key's state go back
	// or its count fall. The stream should never produce one, so sinks log it.
	regression
)

// admit applies SPEC §4 to one row against the key's stored row: only a
// strictly higher revision may replace it, and a stream row may not move the
// state back (EARLY < ON_TIME < LATE < FINAL, so FINAL stays FINAL) nor lower
// the event count (no dip while a restarted job catches up). A reconcile
// correction may lower the count a stream got wrong, but it may not un-final
// a window either: the spec's exception is for counts only.
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

// refusals tallies the rows admit refuses, keeping one regression as an
// example for the warning a sink logs.
type refusals struct {
	stale, regressions int
	example            string
}

// admit applies admit to r, tallying a refusal; it reports whether r is
// accepted.
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

// validateBatch refuses rows and audit records no table can key correctly,
// before any of the batch is written.
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

// sortedRows returns a copy of rows ordered by key, then revision, so that
// several snapshots of one key in a batch are applied oldest first.
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

// memGuard is the in-process version of the SQLite rules for sinks that have
// no database to ask (jsonl, console): the highest stored snapshot per key and
// the audit positions already written. It is not safe for concurrent use; its
// owner holds a lock. Decisions are staged and only committed once the output
// is written, so a failed write does not make the guard run ahead of it.
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

// admitRows returns the accepted rows in application order, counting stale
// and regressing ones.
func (st *guardStage) admitRows(rows []model.Row) []model.Row {
	var accepted []model.Row
	for _, r := range sortedRows(rows) {
		k := rowKey{r.WindowStart, r.Dims}
		prev, have := st.latest[k]
		if !have {
			prev, have = st.g.latest[k]
		}
		if st.refused.admit(prev, have, r) {
			st.latest[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
			accepted = append(accepted, r)
		}
	}
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

// observe records a row already present in durable output (a reopened JSONL
// changelog), keeping the highest revision per key.
func (g *memGuard) observe(r model.Row) {
	k := rowKey{r.WindowStart, r.Dims}
	if prev, ok := g.latest[k]; ok && prev.revision >= r.Revision {
		return
	}
	g.latest[k] = stored{revision: r.Revision, state: r.State, count: r.EventCount}
}

// compareRunConfig checks requested settings against stored ones (see
// SQLite.CheckRunConfig) and returns, sorted, the keys to add.
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
