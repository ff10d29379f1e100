package sinks

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"

	"cloud.google.com/go/bigquery"
	"github.com/revenue-stream/hourly/model"
)

// Tally is what a run's summary shows of a sink, counted where the rows are
// stored rather than read back whole.
type Tally struct {
	// Current counts hourly_revenue's rows (one per key) by result state.
	Current                                    map[model.ResultState]int64
	Changelog, TooLate, Conflicts, Quarantined int64
	// Latest is the last rows of CurrentRows, in its order.
	Latest []model.Row
}

// Keys is how many keys hourly_revenue holds.
func (t Tally) Keys() (n int64) {
	for _, c := range t.Current {
		n += c
	}
	return n
}

type windowCount struct {
	start int64
	state model.ResultState
	n     int64
}

// countedReader is what a backend counts for tally.
type countedReader interface {
	currentCounts(ctx context.Context) ([]windowCount, error)
	tableCount(ctx context.Context, t *Table) (int64, error)
	CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
}

// tally counts the tables, reading only the last windows' rows for Latest.
func tally(ctx context.Context, r countedReader, latest int) (Tally, error) {
	t := Tally{Current: map[model.ResultState]int64{}}
	counts, err := r.currentCounts(ctx)
	if err != nil {
		return t, err
	}
	perStart := map[int64]int64{}
	for _, c := range counts {
		t.Current[c.state] += c.n
		perStart[c.start] += c.n
	}
	// The latest rows lie in the last window starts holding latest of them.
	starts := slices.Sorted(maps.Keys(perStart))
	slices.Reverse(starts)
	var from, seen int64
	for _, s := range starts {
		if seen >= int64(latest) {
			break
		}
		from, seen = s, seen+perStart[s]
	}
	if latest > 0 && len(starts) > 0 {
		rows, err := r.CurrentRowsFrom(ctx, from)
		if err != nil {
			return t, err
		}
		t.Latest = rows[max(0, len(rows)-latest):]
	}
	for _, c := range []struct {
		n *int64
		t *Table
	}{{&t.Changelog, HourlyRevenueChangelog}, {&t.TooLate, TooLateEvents}, {&t.Conflicts, ConflictEvents}, {&t.Quarantined, QuarantinedEvents}} {
		if *c.n, err = r.tableCount(ctx, c.t); err != nil {
			return t, err
		}
	}
	return t, nil
}

// Tally counts the tables (see Tally).
func (s *SQLite) Tally(ctx context.Context, latest int) (Tally, error) { return tally(ctx, s, latest) }

func (s *SQLite) currentCounts(ctx context.Context) (out []windowCount, err error) {
	err = s.query(ctx, "count hourly_revenue", `SELECT window_start, result_state, COUNT(*) FROM hourly_revenue
		GROUP BY window_start, result_state`, func(rs *sql.Rows) error {
		var (
			ws, st string
			c      windowCount
		)
		if err := rs.Scan(&ws, &st, &c.n); err != nil {
			return err
		}
		if c.start, err = parseTime(ws); err != nil {
			return err
		}
		if c.state, err = model.ParseResultState(st); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

func (s *SQLite) tableCount(ctx context.Context, t *Table) (n int64, err error) {
	err = s.query(ctx, "count "+t.Name, `SELECT COUNT(*) FROM `+t.Name, func(rs *sql.Rows) error { return rs.Scan(&n) })
	return n, err
}

// Tally counts the tables, one row per revision and per source_position.
func (b *BigQuery) Tally(ctx context.Context, latest int) (Tally, error) {
	return tally(ctx, b, latest)
}

func (b *BigQuery) currentCounts(ctx context.Context) (out []windowCount, err error) {
	err = b.read(ctx, "count "+bqCurrent, `SELECT UNIX_MILLIS(window_start) AS w, result_state AS s, COUNT(*) AS n FROM `+
		b.table(bqCurrent)+` GROUP BY w, s`, nil, func(it *bigquery.RowIterator) error {
		var r struct {
			W int64  `bigquery:"w"`
			S string `bigquery:"s"`
			N int64  `bigquery:"n"`
		}
		if err := it.Next(&r); err != nil {
			return err
		}
		st, err := model.ParseResultState(r.S)
		if err != nil {
			return err
		}
		out = append(out, windowCount{start: r.W, state: st, n: r.N})
		return nil
	})
	return out, err
}

func (b *BigQuery) tableCount(ctx context.Context, t *Table) (int64, error) {
	key := "source_position"
	if t == HourlyRevenueChangelog {
		key = "window_start, dims, revision"
	}
	return b.readCount(ctx, "count "+t.Name, `SELECT COUNT(*) AS n FROM (SELECT 1 FROM `+b.table(t.Name)+
		` WHERE TRUE`+oncePer(key, key)+`)`, nil)
}

// Tally counts the rows the reads give: jsonl reads its files whole anyway.
func (j *JSONL) Tally(ctx context.Context, latest int) (Tally, error) {
	t := Tally{Current: map[model.ResultState]int64{}}
	log, err1 := j.Changelog(ctx)
	current, err2 := j.CurrentRows(ctx)
	late, err3 := j.TooLate(ctx)
	conflicts, err4 := j.Conflicts(ctx)
	quarantined, err5 := j.Quarantined(ctx)
	for _, r := range current {
		t.Current[r.State]++
	}
	if latest > 0 {
		t.Latest = current[max(0, len(current)-latest):]
	}
	t.Changelog, t.TooLate, t.Conflicts, t.Quarantined = int64(len(log)), int64(len(late)), int64(len(conflicts)), int64(len(quarantined))
	return t, errors.Join(err1, err2, err3, err4, err5)
}
