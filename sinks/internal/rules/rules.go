// Package rules holds SPEC §4's revision rules as the sinks apply them, the
// last line of defence behind transforms.Revisions: only a higher revision
// replaces a key's row, never moving its state back nor (but for reconcile)
// lowering its count; each audit position is stored once. It also holds the
// run_config and resume-point checks every backend shares.
package rules

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Stored is what the rules need of a key's current row.
type Stored struct {
	Revision int64
	State    model.ResultState
	Count    int64
}

func storedOf(r model.Row) Stored {
	return Stored{Revision: r.Revision, State: r.State, Count: r.EventCount}
}

// Key identifies a key without building a string for it.
type Key struct {
	WindowStart int64
	Dims        string
}

// KeyOf is r's key.
func KeyOf(r model.Row) Key { return Key{r.WindowStart, r.Dims} }

// Refusals tallies the rows the rules refuse, with one regression as an
// example for the sink's warning.
type Refusals struct {
	Stale, Regressions int
	example            string
}

// admit applies SPEC §4 to r against its key's stored row, tallying a
// refusal: only a higher revision replaces it (else a replay), and it may not
// move the state back (FINAL stays FINAL) nor, but for a reconcile
// correction, lower the event count (a regression, which sinks log).
func (f *Refusals) admit(prev Stored, have bool, r model.Row) bool {
	switch {
	case !have:
		return true
	case r.Revision <= prev.Revision:
	case r.State < prev.State || !r.ByReconcile() && r.EventCount < prev.Count:
		f.Regressions++
		if f.example == "" {
			f.example = fmt.Sprintf("%s revision %d %v count %d over revision %d %v count %d",
				r.Key(), r.Revision, r.State, r.EventCount, prev.Revision, prev.State, prev.Count)
		}
	default:
		return true
	}
	f.Stale++
	return false
}

// AdmitAll admits sorted rows (SortedRows), each against its key's last
// accepted row, else its stored one, returning the accepted and each key's last.
func (f *Refusals) AdmitAll(sorted []model.Row, have map[Key]Stored) ([]model.Row, map[Key]Stored) {
	var accepted []model.Row
	latest := map[Key]Stored{}
	for _, r := range sorted {
		k := KeyOf(r)
		prev, ok := latest[k]
		if !ok {
			prev, ok = have[k]
		}
		if f.admit(prev, ok, r) {
			latest[k] = storedOf(r)
			accepted = append(accepted, r)
		}
	}
	return accepted, latest
}

// Warn logs the regressions refused, if any, as the sink named.
func (f *Refusals) Warn(sinkName string, attrs ...any) {
	if f.Regressions > 0 {
		slog.Warn(sinkName+": rejected rows that would lower a count or move a state back",
			append(attrs, "rows", f.Regressions, "example", f.example)...)
	}
}

// SameKey reports whether two rows have one key.
func SameKey(a, b model.Row) bool { return a.WindowStart == b.WindowStart && a.Dims == b.Dims }

// LastPerKey keeps the last of each key's run in vs, sorted by key.
func LastPerKey[T any](vs []T, row func(T) model.Row) []T {
	var out []T
	for i, v := range vs {
		if i+1 == len(vs) || !SameKey(row(vs[i+1]), row(v)) {
			out = append(out, v)
		}
	}
	return out
}

// SortedRows returns rows ordered by key, then revision: a key's snapshots
// apply oldest first.
func SortedRows(rows []model.Row) []model.Row {
	out := append([]model.Row(nil), rows...)
	slices.SortStableFunc(out, model.CompareRows)
	return out
}

// Guard keeps the revision and audit-once rules in memory for the sinks
// with no database (jsonl, console).
type Guard struct {
	latest map[Key]Stored
	audit  map[string]bool // "<table>\x00<source_position>"
}

func NewGuard() *Guard { return &Guard{latest: map[Key]Stored{}, audit: map[string]bool{}} }

// Write is those sinks' guarded write: it refuses a cancelled ctx and an
// unwritable batch, then, under mu, hands out what the rules admit of b (the
// accepted rows in application order, the audit records new to their table,
// the checkpoints) and how many rows were stale. Decisions are committed only
// once out succeeded, so the guard never runs ahead of its output.
// Regressions refused are logged as sinkName, attrs.
func (g *Guard) Write(ctx context.Context, mu sync.Locker, b sink.Batch, out func(admitted sink.Batch, stale int) error,
	sinkName string, attrs ...any) (sink.Result, error) {
	if err := ctx.Err(); err != nil {
		return sink.Result{}, err
	}
	if err := b.Validate(); err != nil {
		return sink.Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	var refused Refusals
	rows, latest := refused.AdmitAll(SortedRows(b.Rows), g.latest)
	audit := map[string]bool{}
	admitted := sink.Batch{Rows: rows, Progress: b.Progress, Audit: sink.Audit{
		TooLate:     newAudits(g, audit, table.TooLateCodec, b.TooLate),
		Conflicts:   newAudits(g, audit, table.ConflictCodec, b.Conflicts),
		Quarantined: newAudits(g, audit, table.QuarantinedCodec, b.Quarantined),
	}}
	if err := out(admitted, refused.Stale); err != nil {
		return sink.Result{}, err
	}
	maps.Copy(g.latest, latest)
	maps.Copy(g.audit, audit)
	refused.Warn(sinkName, attrs...)
	return sink.Result{Accepted: len(rows), Stale: refused.Stale, AuditInserted: admitted.Len()}, nil
}

// newAudits returns the records whose position is new to c's table, staging
// them in staged.
func newAudits[T any](g *Guard, staged map[string]bool, c table.Codec[T], recs []T) []T {
	return slices.DeleteFunc(slices.Clone(recs), func(v T) bool {
		k := c.Table.Name + "\x00" + c.Position(v)
		if g.audit[k] || staged[k] {
			return true
		}
		staged[k] = true
		return false
	})
}

// Observe records a row already in durable output (a reopened JSONL file).
func (g *Guard) Observe(r model.Row) {
	k := KeyOf(r)
	if prev, ok := g.latest[k]; ok && prev.Revision >= r.Revision {
		return
	}
	g.latest[k] = storedOf(r)
}

// ObserveAudit records an audit position already in durable output.
func (g *Guard) ObserveAudit(table, position string) { g.audit[table+"\x00"+position] = true }

// CompareRunConfig checks requested settings against stored ones and returns,
// sorted, the keys to add.
func CompareRunConfig(sinkName string, have, want map[string]string) ([]string, error) {
	var had, asked, added []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, ok := have[k]
		switch {
		case !ok:
			added = append(added, k)
		case canonicalSetting(k, v) != canonicalSetting(k, want[k]):
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

// canonicalSetting is a run_config value in the form that shapes keys: the
// dimensions as a sorted set, since dims are a canonical JSON object with
// sorted keys (SPEC §5) and "platform,country" makes the same keys as
// "country,platform".
func canonicalSetting(key, v string) string {
	if key != "dimensions" || v == "" {
		return v
	}
	names := strings.Split(v, ",")
	slices.Sort(names)
	return strings.Join(names, ",")
}

// checkResumePoints refuses points with no partition or run, or two points
// for one partition.
func checkResumePoints(points []model.Checkpoint) error {
	seen := make(map[string]bool, len(points))
	for _, p := range points {
		switch {
		case p.Partition == "":
			return fmt.Errorf("seal resume point %s after %q: empty partition", p.Run, p.File)
		case p.Run == "":
			return fmt.Errorf("seal resume point of partition %s: empty run", p.Partition)
		case seen[p.Partition]:
			return fmt.Errorf("seal resume points: partition %s twice", p.Partition)
		}
		seen[p.Partition] = true
	}
	return nil
}

// SealResume is every backend's ProgressStore.SealResume: it refuses bad
// points (naming sinkName), then hands store, stamped now, the points that
// differ from their partition's current one, so sealed_at says when a point
// was first sealed.
func SealResume(ctx context.Context, sinkName string, points []model.Checkpoint,
	current func(context.Context) ([]model.Checkpoint, error), store func([]table.CheckpointRow) error) error {
	if err := checkResumePoints(points); err != nil {
		return fmt.Errorf("%s: %w", sinkName, err)
	}
	stored, err := current(ctx)
	if err != nil {
		return err
	}
	have := make(map[string]model.Checkpoint, len(stored))
	for _, c := range stored {
		have[c.Partition] = c
	}
	changed := slices.DeleteFunc(slices.Clone(points), func(p model.Checkpoint) bool {
		c, ok := have[p.Partition]
		return ok && c == p
	})
	if len(changed) == 0 {
		return nil
	}
	return store(table.CheckpointRows(changed, time.Now()))
}

// SortCheckpoints orders checkpoints by partition, then file.
func SortCheckpoints(cs []model.Checkpoint) {
	slices.SortStableFunc(cs, func(a, b model.Checkpoint) int {
		return cmp.Or(strings.Compare(a.Partition, b.Partition), strings.Compare(a.File, b.File))
	})
}
