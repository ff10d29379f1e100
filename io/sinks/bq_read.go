package sinks

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/revenue-stream/hourly/model"
)

// bqSnapshot is a changelog row as a query parameter and as a result row.
type bqSnapshot struct {
	WindowStart   time.Time `bigquery:"window_start"`
	WindowEnd     time.Time `bigquery:"window_end"`
	Dims          string    `bigquery:"dims"`
	Revenue       *big.Rat  `bigquery:"revenue"`
	RevenueMicros int64     `bigquery:"revenue_micros"`
	EventCount    int64     `bigquery:"event_count"`
	Revision      int64     `bigquery:"revision"`
	ResultState   string    `bigquery:"result_state"`
	WrittenAt     time.Time `bigquery:"written_at"`
	Writer        string    `bigquery:"writer"`
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ratMicros is an exact NUMERIC value for an amount in micros.
func ratMicros(m int64) *big.Rat { return big.NewRat(m, 1_000_000) }

func (s bqSnapshot) row() (model.Row, error) {
	st, err := model.ParseResultState(s.ResultState)
	if err != nil {
		return model.Row{}, fmt.Errorf("%s %s revision %d: %w", s.WindowStart.UTC().Format(time.RFC3339), s.Dims, s.Revision, err)
	}
	return model.Row{WindowStart: s.WindowStart.UnixMilli(), WindowEnd: s.WindowEnd.UnixMilli(), Dims: s.Dims,
		RevenueMicros: s.RevenueMicros, EventCount: s.EventCount, Revision: s.Revision, State: st, Writer: s.Writer}, nil
}

const snapshotColumns = "window_start, window_end, dims, revenue, revenue_micros, event_count, revision, result_state, written_at, writer"

// bq audit rows as query parameters.
type (
	bqTooLateRow struct {
		SourcePosition string    `bigquery:"source_position"`
		EventID        string    `bigquery:"event_id"`
		EventTime      time.Time `bigquery:"event_time"`
		Payload        string    `bigquery:"payload"`
		Reason         string    `bigquery:"reason"`
	}
	bqConflictRow struct {
		SourcePosition         string `bigquery:"source_position"`
		EventID                string `bigquery:"event_id"`
		FirstFingerprint       string `bigquery:"first_fingerprint"`
		ConflictingFingerprint string `bigquery:"conflicting_fingerprint"`
		Payload                string `bigquery:"payload"`
	}
	bqQuarantinedRow struct {
		SourcePosition string `bigquery:"source_position"`
		Payload        string `bigquery:"payload"`
		Reason         string `bigquery:"reason"`
	}
)

// RunConfig returns the stored run settings.
func (b *BigQuery) RunConfig(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := b.read(ctx, "read "+bqRunConfig, `SELECT key, value FROM `+b.table(bqRunConfig), nil,
		func(it *bigquery.RowIterator) error {
			var r struct {
				Key   string `bigquery:"key"`
				Value string `bigquery:"value"`
			}
			if err := it.Next(&r); err != nil {
				return err
			}
			out[r.Key] = r.Value
			return nil
		})
	return out, err
}

func (b *BigQuery) readSnapshots(ctx context.Context, what, sql string, params ...bigquery.QueryParameter) ([]model.Row, error) {
	var out []model.Row
	err := b.read(ctx, what, sql, params, func(it *bigquery.RowIterator) error {
		var s bqSnapshot
		if err := it.Next(&s); err != nil {
			return err
		}
		r, err := s.row()
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedRows(out), nil
}

// CurrentRows returns the current snapshot of every key (the hourly_revenue
// view), ordered by window_start then dims.
func (b *BigQuery) CurrentRows(ctx context.Context) ([]model.Row, error) {
	return b.readSnapshots(ctx, "read "+bqCurrent, `SELECT window_start, window_end, dims, revenue, revenue_micros,
event_count, revision, result_state, writer FROM `+b.table(bqCurrent))
}

// CurrentRowsFrom is CurrentRows limited to windows starting at or after
// windowStart (epoch ms): a filter on the changelog's partition column
// (window_start, also the view's PARTITION BY key, so BigQuery applies it
// before the QUALIFY and prunes the older day partitions), so a restarted
// job's seed (Published) reads what it can still reach, not the history.
func (b *BigQuery) CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error) {
	return b.readSnapshots(ctx, "read "+bqCurrent, `SELECT window_start, window_end, dims, revenue, revenue_micros,
event_count, revision, result_state, writer FROM `+b.table(bqCurrent)+`
WHERE window_start >= TIMESTAMP_MILLIS(@from)`, bigquery.QueryParameter{Name: "from", Value: windowStart})
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (b *BigQuery) Changelog(ctx context.Context) ([]model.Row, error) {
	return b.readSnapshots(ctx, "read "+bqChangelog, `SELECT `+snapshotColumns+` FROM `+b.table(bqChangelog)+
		` WHERE TRUE`+oncePer("window_start, dims, revision", revisionOrder))
}

// FinalHorizon returns the latest window_end among FINAL rows (see
// SQLite.FinalHorizon).
func (b *BigQuery) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	err = b.read(ctx, "read final horizon", `SELECT MAX(window_end) AS horizon FROM `+b.table(bqCurrent)+`
WHERE result_state = 'FINAL'`, nil, func(it *bigquery.RowIterator) error {
		var r struct {
			Horizon bigquery.NullTimestamp `bigquery:"horizon"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		if r.Horizon.Valid {
			windowEndMs, ok = r.Horizon.Timestamp.UnixMilli(), true
		}
		return nil
	})
	return windowEndMs, ok, err
}

// TooLate returns the too_late_events rows ordered by source_position.
func (b *BigQuery) TooLate(ctx context.Context) ([]model.TooLate, error) {
	var out []model.TooLate
	err := b.read(ctx, "read "+bqTooLate, `SELECT source_position, event_id, event_time, payload, reason FROM `+
		b.table(bqTooLate)+` WHERE TRUE`+oncePer("source_position", "event_id")+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqTooLateRow
		if err := it.Next(&r); err != nil {
			return err
		}
		out = append(out, model.TooLate{Position: r.SourcePosition, EventID: r.EventID, EventTime: r.EventTime.UnixMilli(),
			Payload: []byte(r.Payload), Reason: r.Reason})
		return nil
	})
	return out, err
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (b *BigQuery) Conflicts(ctx context.Context) ([]model.Conflict, error) {
	var out []model.Conflict
	err := b.read(ctx, "read "+bqConflicts, `SELECT source_position, event_id, first_fingerprint, conflicting_fingerprint,
payload FROM `+b.table(bqConflicts)+` WHERE TRUE`+oncePer("source_position", "event_id")+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqConflictRow
		if err := it.Next(&r); err != nil {
			return err
		}
		first, err := strconv.ParseUint(r.FirstFingerprint, 16, 64)
		if err != nil {
			return fmt.Errorf("first_fingerprint %q: %w", r.FirstFingerprint, err)
		}
		confl, err := strconv.ParseUint(r.ConflictingFingerprint, 16, 64)
		if err != nil {
			return fmt.Errorf("conflicting_fingerprint %q: %w", r.ConflictingFingerprint, err)
		}
		out = append(out, model.Conflict{Position: r.SourcePosition, EventID: r.EventID, FirstFingerprint: first,
			ConflictingFingerprint: confl, Payload: []byte(r.Payload)})
		return nil
	})
	return out, err
}

// Quarantined returns the quarantined_events rows ordered by source_position.
func (b *BigQuery) Quarantined(ctx context.Context) ([]model.Quarantined, error) {
	var out []model.Quarantined
	err := b.read(ctx, "read "+bqQuarantined, `SELECT source_position, payload, reason FROM `+
		b.table(bqQuarantined)+` WHERE TRUE`+oncePer("source_position", "reason")+` ORDER BY source_position`, nil, func(it *bigquery.RowIterator) error {
		var r bqQuarantinedRow
		if err := it.Next(&r); err != nil {
			return err
		}
		out = append(out, model.Quarantined{Position: r.SourcePosition, Payload: []byte(r.Payload), Reason: r.Reason})
		return nil
	})
	return out, err
}

// bqDiff is a reconcile_diffs row as read.
type bqDiff struct {
	RunID                   string             `bigquery:"run_id"`
	WindowStart             time.Time          `bigquery:"window_start"`
	Dims                    string             `bigquery:"dims"`
	StreamedRevenueMicros   int64              `bigquery:"streamed_revenue_micros"`
	RecomputedRevenueMicros int64              `bigquery:"recomputed_revenue_micros"`
	DeltaMicros             int64              `bigquery:"delta_micros"`
	StreamedCount           int64              `bigquery:"streamed_count"`
	RecomputedCount         int64              `bigquery:"recomputed_count"`
	Classification          string             `bigquery:"classification"`
	AppliedRevision         bigquery.NullInt64 `bigquery:"applied_revision"`
}

// Diffs returns the stored reconcile diffs ordered by run, window and dims.
func (b *BigQuery) Diffs(ctx context.Context) ([]Diff, error) {
	var out []Diff
	err := b.read(ctx, "read "+bqDiffs, `SELECT run_id, window_start, dims, streamed_revenue_micros,
recomputed_revenue_micros, delta_micros, streamed_count, recomputed_count, classification, applied_revision
FROM `+b.table(bqDiffs), nil, func(it *bigquery.RowIterator) error {
		var r bqDiff
		if err := it.Next(&r); err != nil {
			return err
		}
		d := Diff{RunID: r.RunID, WindowStart: r.WindowStart.UnixMilli(), Dims: r.Dims,
			StreamedRevenueMicros: r.StreamedRevenueMicros, RecomputedRevenueMicros: r.RecomputedRevenueMicros,
			DeltaMicros: r.DeltaMicros, StreamedCount: r.StreamedCount, RecomputedCount: r.RecomputedCount,
			Classification: r.Classification}
		if r.AppliedRevision.Valid {
			v := r.AppliedRevision.Int64
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
