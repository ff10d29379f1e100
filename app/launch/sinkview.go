package launch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/jsonl"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// sinkView is what the summary and report show of the sink: its tables counted (COUNT(*)) and the
// latest current rows.
type sinkView struct {
	Readable bool
	Tally    sink.Tally
	// Query tells the user how to look at the rows.
	Query string
	spec  sink.Spec
}

// checkSink refuses settings that differ from the sink's rows' (SPEC §5 run_config).
func checkSink(ctx context.Context, spec sink.Spec, cfg map[string]string) error {
	s, err := sink.Open(ctx, spec)
	if err != nil {
		return err
	}
	var check error
	if c, ok := s.(sink.ConfigChecker); ok {
		check = c.CheckRunConfig(ctx, cfg)
	}
	return errors.Join(check, s.Close())
}

// readSink counts the sink's tables after a run (Reader.Tally).
func readSink(ctx context.Context, spec sink.Spec) (sinkView, error) {
	v := sinkView{spec: spec}
	switch spec.Scheme {
	case sink.SchemeSQLite:
		v.Query = fmt.Sprintf("sqlite3 %s 'select * from hourly_revenue'", shellQuote(spec.Path))
	case sink.SchemeBigQuery:
		v.Query = fmt.Sprintf("bq query --nouse_legacy_sql 'select * from `%s.%s.hourly_revenue`'", spec.Project, spec.Dataset)
	case sink.SchemeJSONL:
		v.Query = fmt.Sprintf("jq -c . %s (a changelog: the highest revision per window and dims is current)",
			shellQuote(filepath.Join(spec.Path, jsonl.ChangelogFile)))
	default:
		return sinkView{Query: "the console sink printed every firing above"}, nil
	}
	db, ok, err := sink.OpenReader(ctx, spec)
	if err != nil || !ok {
		return v, err
	}
	defer db.Close()
	v.Readable = true
	v.Tally, err = db.Tally(ctx, latestRows)
	return v, err
}

// changelog reads every revision the sink holds, for the run report.
func (v sinkView) changelog(ctx context.Context) ([]model.Row, error) {
	db, ok, err := sink.OpenReader(ctx, v.spec)
	if err != nil || !ok {
		return nil, err
	}
	defer db.Close()
	return db.Changelog(ctx)
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
