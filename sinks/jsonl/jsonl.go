package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// ChangelogFile is the file of hourly_revenue's changelog in a jsonl sink's
// folder; each table has one, named after it.
const ChangelogFile = "hourly_revenue.jsonl"

var (
	fileTooLate     = table.TooLateEvents.Name + ".jsonl"
	fileConflicts   = table.ConflictEvents.Name + ".jsonl"
	fileQuarantined = table.QuarantinedEvents.Name + ".jsonl"
	fileRunConfig   = table.RunConfig.Name + ".json"
	fileCheckpoints = table.SourceCheckpoints.Name + ".jsonl"
	fileResume      = table.SourceResume.Name + ".jsonl"
	// appendFiles are the files Write appends to.
	appendFiles = []string{ChangelogFile, fileTooLate, fileConflicts, fileQuarantined, fileCheckpoints}
)

// JSONL is the --sink=jsonl:DIR debugging sink: one JSON object per line,
// appended; hourly_revenue.jsonl holds every accepted snapshot (a reader keeps
// the highest revision per key). The rules hold against what this process
// wrote and read at open; a second process is not coordinated.
type JSONL struct {
	mu       sync.Mutex
	dir      string
	files    map[string]*os.File
	guard    *rules.Guard
	readOnly bool // OpenReader's or OpenProgress's handle writes no batch
	sealer   bool // OpenProgress's handle may SealResume
}

var _ sink.Sink = (*JSONL)(nil)
var _ sink.ConfigChecker = (*JSONL)(nil)

func init() {
	sink.Register(sink.SchemeJSONL, sink.Backend{
		Open: func(_ context.Context, spec sink.Spec) (sink.Sink, error) { return Open(spec.Path) },
		Existing: func(_ context.Context, spec sink.Spec, progress bool) (sink.Sink, bool, error) {
			return openReader(spec.Path, progress)
		},
	})
}

// Open opens or creates the sink directory, reading existing files so a
// restarted process keeps rejecting stale rows and written positions.
func Open(dir string) (*JSONL, error) {
	if dir == "" {
		return nil, errors.New("jsonl sink: empty directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	j := &JSONL{dir: dir, files: map[string]*os.File{}, guard: rules.NewGuard()}
	for _, name := range appendFiles {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			j.Close()
			return nil, fmt.Errorf("jsonl sink %s: %w", dir, err)
		}
		j.files[name] = f
		if err := j.load(name, f); err != nil {
			j.Close()
			return nil, fmt.Errorf("jsonl sink %s: %w", filepath.Join(dir, name), err)
		}
	}
	return j, nil
}

// load seeds the guard from a file just opened. A torn last line (a crash)
// is skipped and terminated, so the next append starts a line of its own.
func (j *JSONL) load(name string, f *os.File) error {
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	lineNo, bad := 0, 0
	for line := range bytes.Lines(data) {
		lineNo++
		if line[len(line)-1] != '\n' {
			slog.Warn("jsonl sink: skipping a torn last line", "file", f.Name(), "line", lineNo)
			if _, err := f.Write([]byte("\n")); err != nil {
				return err
			}
			break
		}
		if !j.loadLine(name, line) {
			bad++
		}
	}
	if bad > 0 {
		slog.Warn("jsonl sink: skipped unreadable lines", "file", f.Name(), "lines", bad)
	}
	return nil
}

func (j *JSONL) loadLine(name string, line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || name == fileCheckpoints {
		return true // checkpoints seed no guard: a re-sent one is appended again
	}
	if name == ChangelogFile {
		r, err := table.DecodeJSONLine(table.ChangelogCodec, line)
		if err != nil {
			return false
		}
		j.guard.Observe(r.Row)
		return true
	}
	var pos struct {
		SourcePosition string `json:"source_position"`
	}
	if err := json.Unmarshal(line, &pos); err != nil || pos.SourcePosition == "" {
		return false
	}
	j.guard.ObserveAudit(strings.TrimSuffix(name, ".jsonl"), pos.SourcePosition)
	return true
}

// Write appends the accepted rows and new audit rows (rules.Guard.Write).
func (j *JSONL) Write(ctx context.Context, b sink.Batch) (sink.Result, error) {
	res, err := j.guard.Write(ctx, &j.mu, b, j.append, "jsonl sink", "dir", j.dir)
	if err != nil {
		return res, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	return res, nil
}

// append writes an admitted batch, one write per file, without fsync: a
// debug sink.
func (j *JSONL) append(b sink.Batch, _ int) error {
	if j.readOnly {
		return errors.New("opened for reading")
	}
	if j.files == nil {
		return errors.New("closed")
	}
	now := time.Now()
	out := map[string]*bytes.Buffer{}
	for _, name := range appendFiles {
		out[name] = &bytes.Buffer{}
	}
	for _, r := range b.Rows {
		table.EncodeJSONLine(out[ChangelogFile], table.ChangelogCodec, sink.ChangelogEntry{Row: r, WrittenAt: now})
	}
	encodeLines(out[fileTooLate], table.TooLateCodec, b.TooLate)
	encodeLines(out[fileConflicts], table.ConflictCodec, b.Conflicts)
	encodeLines(out[fileQuarantined], table.QuarantinedCodec, b.Quarantined)
	encodeLines(out[fileCheckpoints], table.CheckpointCodec, table.CheckpointRows(b.Progress, now))
	for _, name := range appendFiles {
		if buf := out[name]; buf.Len() > 0 {
			if _, err := j.files[name].Write(buf.Bytes()); err != nil {
				return fmt.Errorf("append %s: %w", name, err)
			}
		}
	}
	return nil
}

// CheckRunConfig applies the run_config rule to DIR/run_config.json.
func (j *JSONL) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	path := filepath.Join(j.dir, fileRunConfig)
	have := map[string]string{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("jsonl sink %s: read run config: %w", j.dir, err)
	default:
		if err := json.Unmarshal(data, &have); err != nil {
			return fmt.Errorf("jsonl sink %s: read run config: %w", path, err)
		}
	}
	added, err := rules.CompareRunConfig(j.dir, have, cfg)
	if err != nil || len(added) == 0 {
		return err
	}
	for _, k := range added {
		have[k] = cfg[k]
	}
	data, err = json.MarshalIndent(have, "", "  ")
	if err != nil {
		return fmt.Errorf("jsonl sink %s: encode run config: %w", j.dir, err)
	}
	if err := files.Write(ctx, path, append(data, '\n')); err != nil {
		return fmt.Errorf("jsonl sink %s: write run config: %w", j.dir, err)
	}
	return nil
}

func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	for name, f := range j.files {
		if err := f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("jsonl sink %s: close %s: %w", j.dir, name, err))
		}
	}
	j.files = nil
	return errors.Join(errs...)
}

func encodeLines[T any](buf *bytes.Buffer, c table.Codec[T], vs []T) {
	for _, v := range vs {
		table.EncodeJSONLine(buf, c, v)
	}
}

// Row is a snapshot row as JSON, in the jsonl sink's form: hourly_revenue's
// columns, then "writer" when set. Reports render rows through it.
type Row model.Row

// MarshalJSON implements json.Marshaler.
func (r Row) MarshalJSON() ([]byte, error) {
	cols, vals := table.HourlyRevenue.Columns, table.CurrentCodec.Put(nil, model.Row(r))
	if r.Writer != "" {
		cols, vals = append(slices.Clip(cols), table.Column{Name: "writer", Type: table.String}), append(vals, r.Writer)
	}
	buf := bytes.NewBufferString("{")
	table.AppendJSONFields(buf, cols, vals)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a row Row wrote (a JSON run report read back).
func (r *Row) UnmarshalJSON(data []byte) error {
	row, err := table.DecodeJSONLine(table.CurrentCodec, data)
	if err != nil {
		return err
	}
	var w struct {
		Writer string `json:"writer"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	row.Writer = w.Writer
	*r = Row(row)
	return nil
}
