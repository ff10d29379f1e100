// Package table is SPEC §5's table contract, written once for the backends:
// each table's columns, key and codec, and the text and JSON forms of a
// value. The SQLite DDL, the BigQuery schema and row descriptors and the
// jsonl lines derive from it.
package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Type is a column's logical type, independent of a backend.
type Type uint8

const (
	// Time is an event-time instant: int64 epoch ms in Go, RFC 3339 UTC text
	// in SQLite and JSON, TIMESTAMP in BigQuery.
	Time Type = iota + 1
	// WallTime is a processing-time instant (time.Time), with milliseconds.
	WallTime
	String
	Int64
	// Money is an exact amount: int64 micros in Go, a six-digit decimal
	// ("137.500000") in SQLite and JSON, NUMERIC in BigQuery. Never a float.
	Money
)

// Column is one column of a table. Only applied_revision is Nullable (nil
// in Go).
type Column struct {
	Name     string
	Type     Type
	Nullable bool
}

// Table describes one table of SPEC §5: its columns, the Key a row is unique
// by, and BigQuery's day-partitioning column (or "") and clustering.
type Table struct {
	Name       string
	Columns    []Column
	Key        []string
	Partition  string
	Clustering []string
}

func (t *Table) Names() []string {
	return slicesx.Map(t.Columns, func(c Column) string { return c.Name })
}

// snapshotColumns are hourly_revenue's columns (SPEC §5).
var snapshotColumns = []Column{
	{Name: "window_start", Type: Time},
	{Name: "window_end", Type: Time},
	{Name: "dims", Type: String},
	{Name: "revenue", Type: Money},
	{Name: "revenue_micros", Type: Int64},
	{Name: "event_count", Type: Int64},
	{Name: "revision", Type: Int64},
	{Name: "result_state", Type: String},
}

// The tables. hourly_revenue is a view over the changelog in BigQuery.
var (
	HourlyRevenue = &Table{
		Name:    "hourly_revenue",
		Columns: snapshotColumns,
		Key:     []string{"window_start", "dims"},
	}
	HourlyRevenueChangelog = &Table{
		Name: "hourly_revenue_changelog",
		Columns: append(append([]Column(nil), snapshotColumns...),
			Column{Name: "written_at", Type: WallTime},
			Column{Name: "writer", Type: String}),
		Key:        []string{"window_start", "dims", "revision"},
		Partition:  "window_start",
		Clustering: []string{"window_start", "dims"},
	}
	// The audit tables: one row per source_position.
	TooLateEvents = auditTable("too_late_events", "event_time", Column{Name: "event_id", Type: String},
		Column{Name: "event_time", Type: Time}, Column{Name: "payload", Type: String}, Column{Name: "reason", Type: String})
	ConflictEvents = auditTable("conflict_events", "", Column{Name: "event_id", Type: String},
		Column{Name: "first_fingerprint", Type: String}, Column{Name: "conflicting_fingerprint", Type: String},
		Column{Name: "payload", Type: String})
	QuarantinedEvents = auditTable("quarantined_events", "",
		Column{Name: "payload", Type: String}, Column{Name: "reason", Type: String})
	ReconcileDiffs = &Table{
		Name: "reconcile_diffs",
		Columns: []Column{
			{Name: "run_id", Type: String},
			{Name: "window_start", Type: Time},
			{Name: "dims", Type: String},
			{Name: "streamed_revenue_micros", Type: Int64},
			{Name: "recomputed_revenue_micros", Type: Int64},
			{Name: "delta_micros", Type: Int64},
			{Name: "streamed_count", Type: Int64},
			{Name: "recomputed_count", Type: Int64},
			{Name: "classification", Type: String},
			{Name: "applied_revision", Type: Int64, Nullable: true},
		},
		Key:        []string{"run_id", "window_start", "dims"},
		Partition:  "window_start",
		Clustering: []string{"run_id", "dims"},
	}
	RunConfig = &Table{
		Name: "run_config",
		Columns: []Column{
			{Name: "key", Type: String},
			{Name: "value", Type: String},
		},
		Key: []string{"key"},
	}
	// SourceCheckpoints holds one row per file a partition read completely,
	// per run (WriteProgress); keyed by run first for RunCheckpoints and
	// PruneCheckpoints.
	SourceCheckpoints = &Table{
		Name:       "source_checkpoints",
		Columns:    progressColumns("updated_at"),
		Key:        []string{"run", "partition", "file"},
		Clustering: []string{"run"},
	}
	// SourceResume holds where a restart resumes each partition: the point
	// the launcher sealed once every output up to it was durable.
	SourceResume = &Table{
		Name:    "source_resume",
		Columns: progressColumns("sealed_at"),
		Key:     []string{"partition"},
	}
)

// progressColumns are a model.Checkpoint's columns, then the time named at.
func progressColumns(at string) []Column {
	return []Column{
		{Name: "partition", Type: String},
		{Name: "file", Type: String},
		{Name: "offset", Type: Int64},
		{Name: "line", Type: Int64},
		{Name: "max_valid", Type: Int64},
		{Name: "run", Type: String},
		{Name: at, Type: WallTime},
	}
}

// auditTable is source_position, then cols, keyed by source_position.
func auditTable(name, partition string, cols ...Column) *Table {
	return &Table{
		Name:       name,
		Columns:    append([]Column{{Name: "source_position", Type: String}}, cols...),
		Key:        []string{"source_position"},
		Partition:  partition,
		Clustering: []string{"source_position"},
	}
}

// IsAudit reports an audit table: one row per source_position.
func IsAudit(t *Table) bool { return slices.Equal(t.Key, []string{"source_position"}) }

// Tables lists every table, in creation order.
var Tables = []*Table{HourlyRevenue, HourlyRevenueChangelog, TooLateEvents, ConflictEvents,
	QuarantinedEvents, ReconcileDiffs, RunConfig, SourceCheckpoints, SourceResume}

// Codec maps a Go record to a row of its table and back: Put appends the
// column values in order (int64 for Time, Int64 and Money, time.Time for
// WallTime, string, nil for NULL); Get builds a record from them.
type Codec[T any] struct {
	Table *Table
	Put   func(dst []any, v T) []any
	Get   func(v []any) (T, error)
}

// Position is an audit record's source_position, its first column.
func (c Codec[T]) Position(v T) string { return c.Put(nil, v)[0].(string) }

// Each is a reader's callback that gets each row's values and hands fn the
// record they make.
func (c Codec[T]) Each(fn func(T)) func([]any) error {
	return func(vals []any) error {
		v, err := c.Get(vals)
		if err == nil {
			fn(v)
		}
		return err
	}
}

// CheckpointRow is a row of either progress table.
type CheckpointRow struct {
	model.Checkpoint
	At time.Time
}

// ConfigEntry is one run_config row.
type ConfigEntry struct{ Key, Value string }

var (
	CurrentCodec = Codec[model.Row]{Table: HourlyRevenue,
		Put: func(dst []any, r model.Row) []any {
			return append(dst, r.WindowStart, r.WindowEnd, r.Dims, r.RevenueMicros, r.RevenueMicros,
				r.EventCount, r.Revision, r.State.String())
		},
		Get: func(v []any) (model.Row, error) { return snapshotOf(v, "") },
	}
	ChangelogCodec = Codec[sink.ChangelogEntry]{Table: HourlyRevenueChangelog,
		Put: func(dst []any, r sink.ChangelogEntry) []any {
			return append(CurrentCodec.Put(dst, r.Row), r.WrittenAt, writerOf(r.Row))
		},
		Get: func(v []any) (sink.ChangelogEntry, error) {
			r, err := snapshotOf(v, v[9].(string))
			return sink.ChangelogEntry{Row: r, WrittenAt: v[8].(time.Time)}, err
		},
	}
	TooLateCodec = Codec[model.TooLate]{Table: TooLateEvents,
		Put: func(dst []any, t model.TooLate) []any {
			return append(dst, t.Position, t.EventID, t.EventTime, string(t.Payload), tooLateReason(t))
		},
		Get: func(v []any) (model.TooLate, error) {
			return model.TooLate{Position: v[0].(string), EventID: v[1].(string), EventTime: v[2].(int64),
				Payload: []byte(v[3].(string)), Reason: v[4].(string)}, nil
		},
	}
	ConflictCodec = Codec[model.Conflict]{Table: ConflictEvents,
		Put: func(dst []any, c model.Conflict) []any {
			return append(dst, c.Position, c.EventID, model.FingerprintHex(c.FirstFingerprint),
				model.FingerprintHex(c.ConflictingFingerprint), string(c.Payload))
		},
		Get: func(v []any) (model.Conflict, error) {
			c := model.Conflict{Position: v[0].(string), EventID: v[1].(string), Payload: []byte(v[4].(string))}
			var err error
			if c.FirstFingerprint, err = strconv.ParseUint(v[2].(string), 16, 64); err != nil {
				return c, fmt.Errorf("first_fingerprint %q: %w", v[2], err)
			}
			if c.ConflictingFingerprint, err = strconv.ParseUint(v[3].(string), 16, 64); err != nil {
				return c, fmt.Errorf("conflicting_fingerprint %q: %w", v[3], err)
			}
			return c, nil
		},
	}
	// Detail has no column in SPEC §5 and comes back empty.
	QuarantinedCodec = Codec[model.Quarantined]{Table: QuarantinedEvents,
		Put: func(dst []any, q model.Quarantined) []any {
			return append(dst, q.Position, string(q.Payload), q.Reason)
		},
		Get: func(v []any) (model.Quarantined, error) {
			return model.Quarantined{Position: v[0].(string), Payload: []byte(v[1].(string)), Reason: v[2].(string)}, nil
		},
	}
	DiffCodec = Codec[sink.Diff]{Table: ReconcileDiffs,
		Put: func(dst []any, d sink.Diff) []any {
			var applied any // NULL unless --apply wrote a correction
			if d.AppliedRevision != nil {
				applied = *d.AppliedRevision
			}
			return append(dst, d.RunID, d.WindowStart, d.Dims, d.StreamedRevenueMicros, d.RecomputedRevenueMicros,
				d.DeltaMicros, d.StreamedCount, d.RecomputedCount, d.Classification, applied)
		},
		Get: func(v []any) (sink.Diff, error) {
			d := sink.Diff{RunID: v[0].(string), WindowStart: v[1].(int64), Dims: v[2].(string),
				StreamedRevenueMicros: v[3].(int64), RecomputedRevenueMicros: v[4].(int64), DeltaMicros: v[5].(int64),
				StreamedCount: v[6].(int64), RecomputedCount: v[7].(int64), Classification: v[8].(string)}
			if a, ok := v[9].(int64); ok {
				d.AppliedRevision = &a
			}
			return d, nil
		},
	}
	ConfigCodec = Codec[ConfigEntry]{Table: RunConfig,
		Put: func(dst []any, e ConfigEntry) []any { return append(dst, e.Key, e.Value) },
		Get: func(v []any) (ConfigEntry, error) { return ConfigEntry{v[0].(string), v[1].(string)}, nil },
	}
	CheckpointCodec = Codec[CheckpointRow]{Table: SourceCheckpoints, Put: putCheckpoint, Get: getCheckpoint}
	ResumeCodec     = Codec[CheckpointRow]{Table: SourceResume, Put: putCheckpoint, Get: getCheckpoint}
)

// putCheckpoint and getCheckpoint are the codec of both progress tables.
func putCheckpoint(dst []any, c CheckpointRow) []any {
	return append(dst, c.Partition, c.File, c.Offset, int64(c.Line), c.MaxValid, c.Run, c.At)
}

func getCheckpoint(v []any) (CheckpointRow, error) {
	return CheckpointRow{Checkpoint: model.Checkpoint{Partition: v[0].(string), File: v[1].(string),
		Offset: v[2].(int64), Line: int(v[3].(int64)), MaxValid: v[4].(int64), Run: v[5].(string)},
		At: v[6].(time.Time)}, nil
}

// CheckpointsOf drops the stored-at time.
func CheckpointsOf(rows []CheckpointRow) []model.Checkpoint {
	return slicesx.Map(rows, func(r CheckpointRow) model.Checkpoint { return r.Checkpoint })
}

// CheckpointRows stamps checkpoints with the time they are stored at.
func CheckpointRows(cps []model.Checkpoint, at time.Time) []CheckpointRow {
	return slicesx.Map(cps, func(c model.Checkpoint) CheckpointRow { return CheckpointRow{Checkpoint: c, At: at} })
}

// ConfigEntries are cfg's settings of keys as run_config rows.
func ConfigEntries(cfg map[string]string, keys []string) []ConfigEntry {
	return slicesx.Map(keys, func(k string) ConfigEntry { return ConfigEntry{k, cfg[k]} })
}

// ConfigMap turns run_config rows into settings.
func ConfigMap(rows []ConfigEntry) map[string]string {
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Key] = r.Value
	}
	return out
}

// snapshotOf builds a row from hourly_revenue's column values.
func snapshotOf(v []any, writer string) (model.Row, error) {
	st, err := model.ParseResultState(v[7].(string))
	if err != nil {
		return model.Row{}, &sink.RowError{Column: "result_state", WindowStart: model.FormatTime(v[0].(int64)), Dims: v[2].(string),
			Err: fmt.Errorf("revision %d: %w", v[6], err)}
	}
	return model.Row{WindowStart: v[0].(int64), WindowEnd: v[1].(int64), Dims: v[2].(string),
		RevenueMicros: v[4].(int64), EventCount: v[5].(int64), Revision: v[6].(int64), State: st, Writer: writer}, nil
}

// Text renders a value as SQLite and JSON store it: times as RFC 3339 UTC,
// money as a six-digit decimal.
func Text(c Column, v any) any {
	switch c.Type {
	case Time:
		return model.FormatTime(v.(int64))
	case WallTime:
		return wallTime(v.(time.Time))
	case Money:
		return model.FormatMicros(v.(int64))
	}
	return v
}

// ParseText is the inverse of Text for a column stored as text; an empty
// WallTime (no row joined) is the zero time.
func ParseText(c Column, s string) (any, error) {
	switch c.Type {
	case Time, WallTime:
		if c.Type == WallTime && s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		switch {
		case err != nil:
			return nil, fmt.Errorf("bad time %q: %w", s, err)
		case c.Type == Time:
			return t.UnixMilli(), nil
		}
		return t, nil
	case Money:
		return parseMoney(s)
	}
	return s, nil
}

// wallTime renders processing time: RFC 3339 UTC with milliseconds.
func wallTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// parseMoney is the inverse of model.FormatMicros.
func parseMoney(s string) (int64, error) {
	bad := func() (int64, error) { return 0, fmt.Errorf("bad amount %q", s) }
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if whole == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-") {
		return bad()
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return bad()
	}
	f := int64(0)
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return bad()
		}
	}
	if w > (1<<63-1-f)/1_000_000 {
		return bad()
	}
	m := w*1_000_000 + f
	if neg {
		m = -m
	}
	return m, nil
}

// writerStream is the Writer of rows the streaming job produces.
const writerStream = "stream"

func writerOf(r model.Row) string {
	if r.Writer == "" {
		return writerStream
	}
	return r.Writer
}

// tooLateReason defaults the reason: window_closed is the only one (SPEC §5).
func tooLateReason(t model.TooLate) string {
	if t.Reason == "" {
		return model.ReasonWindowClosed
	}
	return t.Reason
}

// AppendJSONFields appends `"name":value` for each column, comma-separated:
// the JSON form of a row, times and money as strings, as in SQLite.
func AppendJSONFields(buf *bytes.Buffer, cols []Column, vals []any) {
	for i, c := range cols {
		if i > 0 {
			buf.WriteByte(',')
		}
		appendJSONString(buf, c.Name)
		buf.WriteByte(':')
		switch v := vals[i]; {
		case v == nil:
			buf.WriteString("null")
		case c.Type == Int64:
			buf.WriteString(strconv.FormatInt(v.(int64), 10))
		default:
			appendJSONString(buf, Text(c, v).(string))
		}
	}
}

// appendJSONString appends s as a JSON string without HTML escaping, so
// payloads stay readable. Encoding a string into a bytes.Buffer cannot fail.
func appendJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

// EncodeJSONLine appends a record as one JSON line of its table.
func EncodeJSONLine[T any](buf *bytes.Buffer, c Codec[T], v T) {
	buf.WriteByte('{')
	AppendJSONFields(buf, c.Table.Columns, c.Put(nil, v))
	buf.WriteString("}\n")
}

// DecodeJSONLine reads a JSON object of every column into a record; a value it cannot read is a
// *sink.RowError.
func DecodeJSONLine[T any](c Codec[T], line []byte) (T, error) {
	var zero T
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return zero, err
	}
	vals := make([]any, len(c.Table.Columns))
	for i, col := range c.Table.Columns {
		raw, ok := fields[col.Name]
		if !ok {
			return zero, fmt.Errorf("%s: no %s", c.Table.Name, col.Name)
		}
		if col.Nullable && string(raw) == "null" {
			continue
		}
		var err error
		if col.Type == Int64 {
			var n int64
			err = json.Unmarshal(raw, &n)
			vals[i] = n
		} else {
			var s string
			if err = json.Unmarshal(raw, &s); err == nil {
				vals[i], err = ParseText(col, s)
			}
		}
		if err != nil {
			// The key names the row as stored; a key that is not a string names it "".
			text := func(name string) (s string) { json.Unmarshal(fields[name], &s); return s }
			return zero, &sink.RowError{Table: c.Table.Name, Column: col.Name, WindowStart: text("window_start"), Dims: text("dims"), Err: err}
		}
	}
	return c.Get(vals)
}
