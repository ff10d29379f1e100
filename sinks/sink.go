// Package sinks writes the pipeline's outputs (snapshot rows and the three
// audit streams) to SQLite (the default), JSONL, the console or BigQuery
// (SPEC §5), enforcing SPEC §4's revision rules as the last line of defence.
package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Open opens the sink a Spec names (the console writes to os.Stdout).
func Open(ctx context.Context, spec sink.Spec) (sink.Sink, error) {
	b, err := sink.Lookup(spec.Scheme)
	if err != nil {
		return nil, err
	}
	return b.Open(ctx, spec)
}

// OpenReader opens an existing readable sink. ok is false for the console and
// for a SQLite file or jsonl directory that does not exist yet. A jsonl reader
// cannot write.
func OpenReader(ctx context.Context, spec sink.Spec) (r sink.Reader, ok bool, err error) {
	if b, err := sink.Lookup(spec.Scheme); err == nil && b.Reader != nil {
		return b.Reader(ctx, spec)
	}
	return nil, false, nil
}

// OpenProgress opens an existing sink's progress tables for the launcher; ok
// is false as for OpenReader. A jsonl handle writes only source_resume.jsonl.
func OpenProgress(ctx context.Context, spec sink.Spec) (sink.ProgressStore, bool, error) {
	if b, err := sink.Lookup(spec.Scheme); err == nil && b.Progress != nil {
		return b.Progress(ctx, spec)
	}
	return nil, false, nil
}

// registerBackend registers scheme's backend: open opens or creates the sink;
// existing opens one that exists (ok false when none) to read back and, if
// progress is nil, for its progress tables too. b holds its Beam steps.
func registerBackend[S sink.Sink](scheme string, open func(context.Context, sink.Spec) (S, error),
	existing, progress func(context.Context, sink.Spec) (S, bool, error), b sink.Backend) {
	b.Open = func(ctx context.Context, spec sink.Spec) (sink.Sink, error) {
		s, err := open(ctx, spec)
		if err != nil {
			return nil, err // a nil interface, never a typed nil
		}
		return s, nil
	}
	if progress == nil {
		progress = existing
	}
	if existing != nil {
		b.Reader = func(ctx context.Context, spec sink.Spec) (sink.Reader, bool, error) {
			s, ok, err := existing(ctx, spec)
			if err != nil || !ok {
				return nil, false, err
			}
			return any(s).(sink.Reader), true, nil
		}
		b.Progress = func(ctx context.Context, spec sink.Spec) (sink.ProgressStore, bool, error) {
			s, ok, err := progress(ctx, spec)
			if err != nil || !ok {
				return nil, false, err
			}
			return any(s).(sink.ProgressStore), true, nil
		}
	}
	sink.Register(scheme, b)
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
func validateBatch(b sink.Batch) error {
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
func sortDiffs(out []sink.Diff) {
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
