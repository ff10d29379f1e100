// Package oracle recomputes offline, in plain Go, what a bounded replay of a
// raw log must produce (SPEC §3–4), so tests can assert exact results and
// reconcile tests know what --apply must converge to.
//
// It replays each partition in arrival order through the same rules the
// stream uses — rawlog for reading and positions, rawlog.Stamper for the
// partition watermark, event.Parse for validation, triggers.Policy.Closed
// for the too-late gate — and then dedups by event_id across partitions.
// Partitions are processed one after another in sorted order. That is a
// valid schedule of the stream, and the only one that matters when every
// copy of an id stays in its partition (as producers' retries do, and as
// internal/gen writes them): the first copy and every verdict are then fixed
// by each partition's own order.
//
// What the oracle does not model, because a bounded replay cannot show it:
//   - rule (b) of the too-late gate (the pipeline watermark where a record is
//     judged). In a bounded replay its verdicts depend on how fast the
//     runner reads each partition; the oracle judges by rule (a) only, which
//     is what a replay that reads partitions in lockstep produces.
//   - dedup retention: it is at least window + lateness (SPEC §2), so an id
//     is only forgotten after its windows closed, and a later copy is too
//     late by rule (a) before dedup is asked.
//   - EARLY/ON_TIME/LATE rows: only what the FINAL rows must hold.
package oracle

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// Settings are the job settings a replay is recomputed with.
type Settings struct {
	Event     event.Config
	Watermark watermark.Policy
	Triggers  triggers.Policy
	// Now is the processing time every record is read at (its ReadAt): the
	// future_event_time check is made against it. Required, so that a
	// recomputation never depends on the wall clock.
	Now time.Time
}

// DefaultSettings are the SPEC defaults (1h windows, 10m bound, 24h
// lateness, no dimensions) reading at now.
func DefaultSettings(now time.Time) Settings {
	return Settings{
		Event:     event.DefaultConfig(),
		Watermark: watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Triggers:  triggers.Policy{Window: time.Hour, AllowedLateness: 24 * time.Hour},
		Now:       now,
	}
}

// Validate refuses settings the stream would refuse too.
func (s Settings) Validate() error {
	if err := s.Event.Validate(); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if err := s.Triggers.Validate(); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if s.Watermark.OutOfOrderBound < 0 {
		return fmt.Errorf("oracle: --ooo-bound must not be negative, got %v", s.Watermark.OutOfOrderBound)
	}
	if s.Now.IsZero() {
		return errors.New("oracle: Settings.Now is required (the processing time future checks are made against)")
	}
	return nil
}

// Key is a FINAL row's key.
type Key struct {
	WindowStart int64 // epoch ms
	Dims        string
}

func (k Key) String() string { return model.FormatTime(k.WindowStart) + " " + k.Dims }

// Total is a window's exact revenue and event count.
type Total struct {
	RevenueMicros int64
	Count         int64
}

func (t Total) String() string {
	return fmt.Sprintf("%s (%d events)", model.FormatMicros(t.RevenueMicros), t.Count)
}

// Result is what a bounded replay must end with.
type Result struct {
	// Final holds the expected FINAL rows: one per key that had counted data.
	Final map[Key]Total
	// Distinct recomputes over every distinct valid event, too-late ones
	// included: per event_id the copy the stream counted, else the first copy
	// (the lowest source position). It is what reconcile --apply must
	// converge to.
	Distinct map[Key]Total

	// Audit outputs, sorted by position (rawlog.ComparePositions).
	TooLate     []model.TooLate
	Conflicts   []model.Conflict
	Quarantined []model.Quarantined

	// Conservation: Read = Counted + Duplicates + len(Conflicts) +
	// len(Quarantined) + len(TooLate).
	Read, Counted, Duplicates int

	// Blank counts skipped blank lines (not read). Unterminated lists the
	// positions of final lines without a newline, which a bounded replay
	// reads as lines.
	Blank        int
	Unterminated []string

	// Err is set when the settings are invalid or a total overflows int64
	// micros (where the stream fails with triggers.ErrOverflow); Replay
	// returns it as its error.
	Err error
}

// Conserved checks the conservation identity of SPEC §4.
func (r Result) Conserved() error {
	sum := r.Counted + r.Duplicates + len(r.Conflicts) + len(r.Quarantined) + len(r.TooLate)
	if r.Read != sum {
		return fmt.Errorf("oracle: read %d != counted %d + duplicates %d + conflicts %d + quarantined %d + too_late %d",
			r.Read, r.Counted, r.Duplicates, len(r.Conflicts), len(r.Quarantined), len(r.TooLate))
	}
	return nil
}

// ReadPartitions reads every partition of a raw-log folder into memory as by
// rawlog.Scan, with readAt = now.
func ReadPartitions(dir string, maxLine int, now time.Time) (map[string][]model.Record, error) {
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]model.Record, len(parts))
	for _, p := range parts {
		var recs []model.Record
		if _, err := rawlog.Scan(dir, p, maxLine, now.UnixMilli(), func(rec model.Record) error {
			rec.Line = bytes.Clone(rec.Line)
			recs = append(recs, rec)
			return nil
		}); err != nil {
			return nil, err
		}
		out[p] = recs
	}
	return out, nil
}

// Replay recomputes a raw-log folder, streaming each partition from disk.
func Replay(dir string, s Settings) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return Result{}, fmt.Errorf("oracle: %w", err)
	}
	rp := newReplayer(s)
	now := s.Now.UnixMilli()
	for _, p := range parts {
		st := rawlog.NewStamper(s.Watermark, s.Event, now)
		info, err := rawlog.Scan(dir, p, s.Event.MaxLine, now, func(rec model.Record) error {
			rp.record(st, rec)
			return nil
		})
		if err != nil {
			return Result{}, fmt.Errorf("oracle: replay partition %q: %w", p, err)
		}
		rp.res.Blank += info.Blank
		rp.res.Unterminated = append(rp.res.Unterminated, info.Unterminated...)
	}
	res := rp.finish()
	return res, res.Err
}

// ReplayRecords recomputes in-memory partitions (for scenario tests). Each
// partition's records are in arrival order. Records keep their ReadAt when
// set (else Now) and their Position when set (else "<partition>/records:<n>");
// blank lines are skipped and counted in Blank, as a reader would. Invalid
// settings are reported in Result.Err.
func ReplayRecords(parts map[string][]model.Record, s Settings) Result {
	if err := s.Validate(); err != nil {
		return Result{Err: err}
	}
	rp := newReplayer(s)
	now := s.Now.UnixMilli()
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		st := rawlog.NewStamper(s.Watermark, s.Event, now)
		for i, rec := range parts[p] {
			if !rec.Oversized && rawlog.Blank(rec.Line) {
				rp.res.Blank++
				continue
			}
			if rec.Partition == "" {
				rec.Partition = p
			}
			if rec.Position == "" {
				rec.Position = rawlog.Position(p, "records", i+1)
			}
			if rec.ReadAt == 0 {
				rec.ReadAt = now
			}
			rp.record(st, rec)
		}
	}
	return rp.finish()
}

// seen is what the oracle remembers per event_id: the replay's dedup memory
// (event.Seen), and the window and amount of the copy Distinct uses (the
// counted one, else the first).
type seen struct {
	event.Seen
	key    Key
	amount int64
}

type replayer struct {
	s    Settings
	ids  map[string]seen
	dims map[string]string // interned dimension strings
	res  Result
}

func newReplayer(s Settings) *replayer {
	return &replayer{s: s, ids: map[string]seen{}, dims: map[string]string{}}
}

// record applies SPEC §4's order of verdicts to one record: validation, then
// the too-late gate and dedup (event.Seen.Judge).
func (rp *replayer) record(st *rawlog.Stamper, rec model.Record) {
	rp.res.Read++
	ev, q := st.Stamp(&rec)
	if q != nil {
		q.Payload = bytes.Clone(q.Payload) // the reader reuses its buffer
		rp.res.Quarantined = append(rp.res.Quarantined, *q)
		return
	}
	ws := rp.s.Triggers.WindowStart(ev.EventTime)
	key := Key{WindowStart: ws, Dims: rp.intern(ev.Dims)}
	prev, ok := rp.ids[ev.EventID]
	if !ok {
		prev = seen{key: key, amount: ev.AmountMicros}
	}
	switch prev.Judge(ev.Fingerprint, rp.s.Triggers.Closed(ws, rec.WatermarkBefore)) {
	case event.TooLate:
		rp.res.TooLate = append(rp.res.TooLate, model.TooLate{
			Position:  rec.Position,
			EventID:   ev.EventID,
			EventTime: ev.EventTime,
			Payload:   bytes.Clone(rec.Line),
			Reason:    model.ReasonWindowClosed,
		})
	case event.Counted:
		// The counted copy also wins over earlier too-late copies for
		// reconcile, since it is the one the stream counted.
		rp.res.Counted++
		prev.key, prev.amount = key, ev.AmountMicros
	case event.Duplicate:
		rp.res.Duplicates++
	case event.Conflict:
		rp.res.Conflicts = append(rp.res.Conflicts, model.Conflict{
			Position:               rec.Position,
			EventID:                ev.EventID,
			FirstFingerprint:       prev.Fingerprint,
			ConflictingFingerprint: ev.Fingerprint,
			Payload:                bytes.Clone(rec.Line),
		})
	}
	if ok {
		rp.ids[ev.EventID] = prev
	} else {
		rp.ids[strings.Clone(ev.EventID)] = prev
	}
}

func (rp *replayer) intern(s string) string {
	if v, ok := rp.dims[s]; ok {
		return v
	}
	s = strings.Clone(s)
	rp.dims[s] = s
	return s
}

func (rp *replayer) finish() Result {
	res := rp.res
	res.Final, res.Distinct = map[Key]Total{}, map[Key]Total{}
	var overflow []string
	add := func(m map[Key]Total, k Key, amount int64) {
		t := m[k]
		sum, err := triggers.AddMicros(t.RevenueMicros, amount)
		if err != nil {
			overflow = append(overflow, k.String())
		}
		m[k] = Total{RevenueMicros: sum, Count: t.Count + 1}
	}
	for _, e := range rp.ids {
		add(res.Distinct, e.key, e.amount)
		if e.Counted {
			add(res.Final, e.key, e.amount)
		}
	}
	if len(overflow) > 0 {
		slices.Sort(overflow)
		res.Err = fmt.Errorf("oracle: %w for %s", triggers.ErrOverflow, strings.Join(slices.Compact(overflow), ", "))
	}
	byPos := func(a, b string) int { return rawlog.ComparePositions(a, b) }
	slices.SortStableFunc(res.TooLate, func(a, b model.TooLate) int { return byPos(a.Position, b.Position) })
	slices.SortStableFunc(res.Conflicts, func(a, b model.Conflict) int { return byPos(a.Position, b.Position) })
	slices.SortStableFunc(res.Quarantined, func(a, b model.Quarantined) int { return byPos(a.Position, b.Position) })
	return res
}

// Format renders totals as a table sorted by key, one row per line, so a
// failing test can print the whole expected and actual tables.
func Format(m map[Key]Total) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.Dims, b.Dims))
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s  %s\n", k, m[k])
	}
	return b.String()
}

// Diff lists the keys whose totals differ between want and got, sorted; nil
// when they are equal.
func Diff(want, got map[Key]Total) []string {
	return diffMaps(want, got, Key.String, Total.String)
}

// diffMaps lists the keys whose values differ between want and got, one
// line each, sorted; nil when they are equal.
func diffMaps[K comparable, V comparable](want, got map[K]V, key func(K) string, value func(V) string) []string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("%s: want %s, missing", key(k), value(w)))
		} else if g != w {
			out = append(out, fmt.Sprintf("%s: want %s, got %s", key(k), value(w), value(g)))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: unexpected %s", key(k), value(g)))
		}
	}
	slices.Sort(out)
	return out
}

// FinalDiff compares a sink's current rows after a replay with the
// expected FINAL rows: every row FINAL, with the recomputed total. It lists
// one line per difference, sorted; nil when they are equal.
func (r Result) FinalDiff(rows []model.Row) []string {
	got := map[Key]Total{}
	var out []string
	for _, row := range rows {
		if row.State != model.Final {
			out = append(out, fmt.Sprintf("%s: %v after a replay, want FINAL", row.Key(), row.State))
		}
		got[Key{WindowStart: row.WindowStart, Dims: row.Dims}] = Total{RevenueMicros: row.RevenueMicros, Count: row.EventCount}
	}
	return append(out, Diff(r.Final, got)...)
}

// AuditDiff compares a sink's audit rows with the oracle's, byte for byte:
// the same positions in each table, each with the same payload, reason,
// event id, event time and fingerprints. It lists one line per difference,
// sorted; nil when they are equal.
func (r Result) AuditDiff(late []model.TooLate, conflicts []model.Conflict, quarantined []model.Quarantined) []string {
	rows := func(late []model.TooLate, conflicts []model.Conflict, quarantined []model.Quarantined) map[string]string {
		m := map[string]string{}
		for _, v := range late {
			m["too_late_events "+v.Position] = fmt.Sprintf("event_id %q, event_time %s, reason %s, payload %q",
				v.EventID, model.FormatTime(v.EventTime), v.Reason, v.Payload)
		}
		for _, v := range conflicts {
			m["conflict_events "+v.Position] = fmt.Sprintf("event_id %q, first %s, conflicting %s, payload %q",
				v.EventID, model.FingerprintHex(v.FirstFingerprint), model.FingerprintHex(v.ConflictingFingerprint), v.Payload)
		}
		for _, v := range quarantined {
			m["quarantined_events "+v.Position] = fmt.Sprintf("reason %s, payload %q", v.Reason, v.Payload)
		}
		return m
	}
	same := func(s string) string { return s }
	return diffMaps(rows(r.TooLate, r.Conflicts, r.Quarantined), rows(late, conflicts, quarantined), same, same)
}

// SinkDiff reads what a sink holds after a replay and compares it with the
// result: FinalDiff of its current rows, then AuditDiff of its audit
// tables. nil when they are equal.
func (r Result) SinkDiff(ctx context.Context, s sink.Reader) ([]string, error) {
	rows, err := sink.Rows(s.Changelog(ctx, sink.Query{Current: true}))
	if err != nil {
		return nil, err
	}
	a, err := s.Audit(ctx)
	if err != nil {
		return nil, err
	}
	return append(r.FinalDiff(rows), r.AuditDiff(a.TooLate, a.Conflicts, a.Quarantined)...), nil
}

// BenchLog is the benchmarks' generated log: gen.Demo with n events, more retries and no idle
// partition.
func BenchLog(n int) gen.Config {
	c := gen.Demo()
	c.Seed = 1_000_000
	c.Events = n
	c.FilesPerPartition = 10
	c.DupRate, c.ConflictRate, c.LateRate, c.TooLateRate, c.MalformedRate = 0.05, 0.005, 0.01, 0.001, 0.0001
	c.IdlePartition, c.IdleGap = -1, 0
	c.ArrivalField = ""
	return c
}
