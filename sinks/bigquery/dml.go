package bigquery

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	gbq "cloud.google.com/go/bigquery"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/sqlread"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// currentOf reads the stored current row of each key in keys.
func (b *BigQuery) currentOf(ctx context.Context, keys map[rules.Key]bool) (map[rules.Key]rules.Stored, error) {
	starts := map[time.Time]bool{}
	for k := range keys {
		starts[msTime(k.WindowStart)] = true
	}
	rows, err := sqlread.Read(ctx, b.DB, sqlread.StoredCodec, "read current rows", `SELECT `+bqDialect.Columns(sqlread.StoredCodec.Table.Names())+
		` FROM `+b.table(table.HourlyRevenueChangelog.Name)+`
WHERE window_start IN UNNEST(CAST(@starts AS ARRAY<TIMESTAMP>))`+oncePer("window_start, dims", "revision DESC"),
		gbq.QueryParameter{Name: "starts", Value: slices.Collect(maps.Keys(starts))})
	out := make(map[rules.Key]rules.Stored, len(keys))
	for _, r := range rows {
		if keys[r.Key] {
			out[r.Key] = r.Stored
		}
	}
	return out, err
}

// insertMissingSQL inserts the @rows of table no stored row matches on key
// (nor, with newer, at a newer value of that column), in one statement: a
// retry or a concurrent writer's row makes it a no-op. An INSERT, not a
// MERGE: the emulator merges only from a table, on one equality.
func (b *BigQuery) insertMissingSQL(table string, key []string, newer string) string {
	var cols, sel []string
	for _, c := range tableOf(table).Columns {
		s := "s." + c.Name
		if c.Nullable { // NULL travels as 0 (the emulator's reading); applied_revision is never 0
			s = "NULLIF(" + s + ", 0)"
		}
		cols, sel = append(cols, c.Name), append(sel, s)
	}
	match := matching(key)
	if newer != "" {
		match += " AND c." + newer + " >= s." + newer
	}
	return `INSERT INTO ` + b.table(table) + ` (` + strings.Join(cols, ", ") + `)
SELECT ` + strings.Join(sel, ", ") + ` FROM ` + unnestRows(table) + ` AS s
WHERE NOT EXISTS (SELECT 1 FROM ` + b.table(table) + ` AS c WHERE ` + match + `)`
}

// matching is the condition that a stored row c and a parameter row s agree
// on every column of key.
func matching(key []string) string {
	return strings.Join(slicesx.Map(key, func(k string) string { return "c." + k + " = s." + k }), " AND ")
}

// insertMissing runs insertMissingSQL per chunk and returns the rows
// inserted, from DML statistics or (the emulator) by counting keys around it.
func insertMissing[T any](ctx context.Context, b *BigQuery, c table.Codec[T], key []string, newer string, recs []T) (int, error) {
	table := c.Table.Name
	sql := b.insertMissingSQL(table, key, newer)
	stats, err := b.reportsDMLStats(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for part := range slices.Chunk(recs, bqChunk) {
		chunk := gbq.QueryParameter{Name: "rows", Value: bqRowsParam(c, part)}
		var before int64
		if !stats {
			var err error
			if before, err = b.countKeys(ctx, table, key, chunk); err != nil {
				return total, err
			}
		}
		n, known, err := b.exec(ctx, "insert "+table, sql, chunk)
		if err != nil {
			return total, err
		}
		if !known {
			after, err := b.countKeys(ctx, table, key, chunk)
			if err != nil {
				return total, err
			}
			n = after - before
		}
		total += int(n)
	}
	return total, nil
}

func (b *BigQuery) countKeys(ctx context.Context, table string, key []string, rows gbq.QueryParameter) (int64, error) {
	return sqlread.Count(ctx, b.DB, "count "+table, `SELECT COUNT(*) FROM `+b.table(table)+` AS c
WHERE EXISTS (SELECT 1 FROM `+unnestRows(table)+` AS s WHERE `+matching(key)+`)`, rows)
}

// writeRows inserts the sorted rows (rules.SortedRows) the rules admit.
func (b *BigQuery) writeRows(ctx context.Context, rows []model.Row) (accepted, stale int, err error) {
	keys := make(map[rules.Key]bool)
	for _, r := range rows {
		keys[rules.KeyOf(r)] = true
	}
	current, err := b.currentOf(ctx, keys)
	if err != nil {
		return 0, 0, err
	}
	var refused rules.Refusals
	ok, _ := refused.AdmitAll(rows, current)
	refused.Warn("bigquery sink", "sink", b.String())
	now := time.Now().UTC()
	admitted := slicesx.Map(ok, func(r model.Row) sink.ChangelogEntry { return sink.ChangelogEntry{Row: r, WrittenAt: now} })
	n, err := insertMissing(ctx, b, table.ChangelogCodec, []string{"window_start", "dims"}, "revision", admitted)
	if err != nil {
		return 0, 0, err
	}
	// A row another writer stored between the read and the insert is stale.
	accepted, stale = n, refused.Stale+len(admitted)-n
	return accepted, stale, nil
}

// CheckRunConfig refuses a run whose settings differ from the stored ones and
// stores the keys not stored yet (see SQLite.CheckRunConfig).
func (b *BigQuery) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	have, err := b.RunConfig(ctx)
	if err != nil {
		return err
	}
	added, err := rules.CompareRunConfig(b.String(), have, cfg)
	if err != nil {
		return err
	}
	if len(added) == 0 {
		return nil
	}
	_, err = insertMissing(ctx, b, table.ConfigCodec, table.RunConfig.Key, "", table.ConfigEntries(cfg, added))
	if err != nil {
		return err
	}
	// Two runs may have added a key at once: read back.
	have, err = b.RunConfig(ctx)
	if err != nil {
		return err
	}
	_, err = rules.CompareRunConfig(b.String(), have, cfg)
	return err
}

// WriteDiffs stores reconcile diffs, replacing a row with the same (run_id,
// window_start, dims) so a retried run stays idempotent.
func (b *BigQuery) WriteDiffs(ctx context.Context, diffs []sink.Diff) error {
	if len(diffs) == 0 {
		return nil
	}
	// The first diff of each key.
	seen := map[string]bool{}
	rows := slices.DeleteFunc(slices.Clone(diffs), func(d sink.Diff) bool {
		k := d.RunID + "\x00" + strconv.FormatInt(d.WindowStart, 10) + "\x00" + d.Dims
		dup := seen[k]
		seen[k] = true
		return dup
	})
	// Replace: a run writes its diffs before --apply and again after it.
	key := table.ReconcileDiffs.Key
	del := `DELETE FROM ` + b.table(table.ReconcileDiffs.Name) + ` AS c
WHERE EXISTS (SELECT 1 FROM ` + unnestRows(table.ReconcileDiffs.Name) + ` AS s WHERE ` + matching(key) + `)`
	for part := range slices.Chunk(rows, bqChunk) {
		chunk := bqRowsParam(table.DiffCodec, part)
		if _, _, err := b.exec(ctx, "replace "+table.ReconcileDiffs.Name, del, gbq.QueryParameter{Name: "rows", Value: chunk}); err != nil {
			return err
		}
	}
	if _, err := insertMissing(ctx, b, table.DiffCodec, key, "", rows); err != nil {
		return err
	}
	return nil
}
