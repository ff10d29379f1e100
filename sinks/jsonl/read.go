package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// openReader opens an existing directory read-only: it creates nothing
// and leaves a torn last line (a running writer's append). ok is false when
// the directory does not exist.
func openReader(dir string, sealer bool) (*JSONL, bool, error) {
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	return &JSONL{dir: dir, guard: rules.NewGuard(), readOnly: true, sealer: sealer}, true, nil
}

// readJSONLFile decodes every complete line of a sink file (none if missing). A line with a value
// it cannot read is skipped and named in an UnreadableRows error returned with the others.
func readJSONLFile[T any](dir, file string, c table.Codec[T]) ([]T, error) {
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1]
	}
	var out []T
	var bad sink.UnreadableRows
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := table.DecodeJSONLine(c, line)
		if err != nil {
			if err := bad.Skip(err, c.Table.Name); err != nil {
				return nil, fmt.Errorf("jsonl sink %s: %s:%d: %w", dir, file, n, err)
			}
			continue
		}
		out = append(out, v)
	}
	return out, bad.Err()
}

// Changelog filters q.From after reading the file whole; written_at is the
// time the line was appended.
func (j *JSONL) Changelog(_ context.Context, q sink.Query) ([]sink.ChangelogEntry, error) {
	log, err := readJSONLFile(j.dir, ChangelogFile, table.ChangelogCodec)
	if _, ok := sink.Unreadable(err); !ok {
		return nil, err
	}
	if q.From != nil {
		log = slices.DeleteFunc(log, func(e sink.ChangelogEntry) bool { return e.WindowStart < *q.From })
	}
	slices.SortStableFunc(log, func(a, b sink.ChangelogEntry) int { return model.CompareRows(a.Row, b.Row) })
	if q.Current {
		log = rules.LastPerKey(log, func(e sink.ChangelogEntry) model.Row { return e.Row })
	}
	return log, err
}

func (j *JSONL) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	return j.extremeTime(ctx, true, func(r model.Row) (int64, bool) { return r.WindowEnd, r.State == model.Final })
}

// extremeTime returns the latest (or earliest) time at gives of a current
// row it selects; ok is false when it selects none.
func (j *JSONL) extremeTime(ctx context.Context, latest bool, at func(model.Row) (int64, bool)) (ms int64, ok bool, err error) {
	rows, err := sink.Rows(j.Changelog(ctx, sink.Query{Current: true}))
	if err != nil {
		return 0, false, err
	}
	for _, r := range rows {
		if t, in := at(r); in && (!ok || latest && t > ms || !latest && t < ms) {
			ms, ok = t, true
		}
	}
	return ms, ok, nil
}

func (j *JSONL) Audit(context.Context) (a sink.Audit, err error) {
	var errs [3]error
	a.TooLate, errs[0] = readJSONLAudit(j.dir, fileTooLate, table.TooLateCodec)
	a.Conflicts, errs[1] = readJSONLAudit(j.dir, fileConflicts, table.ConflictCodec)
	a.Quarantined, errs[2] = readJSONLAudit(j.dir, fileQuarantined, table.QuarantinedCodec)
	return a, errors.Join(errs[:]...)
}

// readJSONLAudit reads an audit file, the first row per source_position.
func readJSONLAudit[T any](dir, file string, c table.Codec[T]) ([]T, error) {
	recs, err := readJSONLFile(dir, file, c)
	if _, ok := sink.Unreadable(err); !ok {
		return nil, err
	}
	slices.SortStableFunc(recs, func(a, b T) int { return strings.Compare(c.Position(a), c.Position(b)) })
	return slices.CompactFunc(recs, func(a, b T) bool { return c.Position(a) == c.Position(b) }), err
}

// Tally counts the rows the reads give: jsonl reads its files whole anyway.
func (j *JSONL) Tally(ctx context.Context, latest int) (sink.Tally, error) {
	t := sink.Tally{Current: map[model.ResultState]int64{}}
	log, err1 := j.Changelog(ctx, sink.Query{})
	current, err2 := sink.Rows(j.Changelog(ctx, sink.Query{Current: true}))
	a, err3 := j.Audit(ctx)
	for _, r := range current {
		t.Current[r.State]++
	}
	if latest > 0 {
		t.Latest = current[max(0, len(current)-latest):]
	}
	t.Changelog = int64(len(log))
	t.AuditCounts = a.Counts()
	return t, errors.Join(err1, err2, err3)
}
