package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/model"
)

// sinkView is what a run's summary and report show of the sink: the current
// row of every key, every accepted revision, and the audit tables' sizes.
// The console sink keeps nothing to read back.
type sinkView struct {
	Readable  bool
	Current   []model.Row
	Changelog []model.Row
	// Audit counts the rows of too_late_events, conflict_events and
	// quarantined_events.
	Audit map[string]int
	// Query tells the user how to look at the rows.
	Query string
}

// checkSink opens the sink once before the job, to refuse a run whose
// settings differ from those its rows were computed with (SPEC §5
// run_config), and closes it again: the job's writers open their own.
func checkSink(ctx context.Context, spec sinks.Spec, cfg map[string]string) error {
	s, err := sinks.Open(ctx, spec)
	if err != nil {
		return err
	}
	var check error
	if c, ok := s.(sinks.ConfigChecker); ok {
		check = c.CheckRunConfig(ctx, cfg)
	}
	return errors.Join(check, s.Close())
}

// readSink reads the sink back after a run.
func readSink(ctx context.Context, spec sinks.Spec) (sinkView, error) {
	switch spec.Scheme {
	case sinks.SchemeSQLite:
		return readTables(ctx, spec, fmt.Sprintf("sqlite3 %s 'select * from hourly_revenue'", shellQuote(spec.Path)))
	case sinks.SchemeBigQuery:
		return readTables(ctx, spec, fmt.Sprintf("bq query --nouse_legacy_sql 'select * from `%s.%s.hourly_revenue`'",
			spec.Project, spec.Dataset))
	case sinks.SchemeJSONL:
		return readJSONL(spec.Path)
	}
	return sinkView{Query: "the console sink printed every firing above"}, nil
}

// readTables reads a SQLite or BigQuery sink back.
func readTables(ctx context.Context, spec sinks.Spec, query string) (sinkView, error) {
	v := sinkView{Audit: map[string]int{}, Query: query}
	db, ok, err := sinks.OpenReader(ctx, spec)
	if err != nil || !ok {
		return v, err
	}
	defer db.Close()
	v.Readable = true
	if v.Current, err = db.CurrentRows(ctx); err != nil {
		return v, err
	}
	if v.Changelog, err = db.Changelog(ctx); err != nil {
		return v, err
	}
	late, err := db.TooLate(ctx)
	if err != nil {
		return v, err
	}
	conflicts, err := db.Conflicts(ctx)
	if err != nil {
		return v, err
	}
	quarantined, err := db.Quarantined(ctx)
	if err != nil {
		return v, err
	}
	v.Audit["too_late_events"], v.Audit["conflict_events"], v.Audit["quarantined_events"] =
		len(late), len(conflicts), len(quarantined)
	return v, nil
}

// readJSONL reads the jsonl sink's changelog (every accepted snapshot) and
// keeps the highest revision per key as the current row.
func readJSONL(dir string) (sinkView, error) {
	v := sinkView{Readable: true, Audit: map[string]int{},
		Query: fmt.Sprintf("jq -c . %s (a changelog: the highest revision per window and dims is current)",
			shellQuote(filepath.Join(dir, sinks.FileHourlyRevenue)))}
	err := scanLines(filepath.Join(dir, sinks.FileHourlyRevenue), func(line []byte) error {
		var jr struct {
			WindowStart   string `json:"window_start"`
			WindowEnd     string `json:"window_end"`
			Dims          string `json:"dims"`
			RevenueMicros int64  `json:"revenue_micros"`
			EventCount    int64  `json:"event_count"`
			Revision      int64  `json:"revision"`
			ResultState   string `json:"result_state"`
			Writer        string `json:"writer"`
		}
		if err := json.Unmarshal(line, &jr); err != nil {
			return err
		}
		ws, err1 := time.Parse(time.RFC3339Nano, jr.WindowStart)
		we, err2 := time.Parse(time.RFC3339Nano, jr.WindowEnd)
		st, err3 := model.ParseResultState(jr.ResultState)
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		v.Changelog = append(v.Changelog, model.Row{WindowStart: ws.UnixMilli(), WindowEnd: we.UnixMilli(), Dims: jr.Dims,
			RevenueMicros: jr.RevenueMicros, EventCount: jr.EventCount, Revision: jr.Revision, State: st, Writer: jr.Writer})
		return nil
	})
	if err != nil {
		return v, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	slices.SortStableFunc(v.Changelog, model.CompareRows)
	for i, r := range v.Changelog {
		if i+1 == len(v.Changelog) || v.Changelog[i+1].WindowStart != r.WindowStart || v.Changelog[i+1].Dims != r.Dims {
			v.Current = append(v.Current, r)
		}
	}
	for table, file := range map[string]string{"too_late_events": sinks.FileTooLate,
		"conflict_events": sinks.FileConflicts, "quarantined_events": sinks.FileQuarantined} {
		n := 0
		if err := scanLines(filepath.Join(dir, file), func([]byte) error { n++; return nil }); err != nil {
			return v, fmt.Errorf("jsonl sink %s: %w", dir, err)
		}
		v.Audit[table] = n
	}
	return v, nil
}

// scanLines calls fn for every non-blank line of a file; a missing file has
// none.
func scanLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // audit lines carry payloads
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", filepath.Base(path), n, err)
		}
	}
	return sc.Err()
}

// shellQuote quotes a path for a command the user can paste.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
