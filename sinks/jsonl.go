package sinks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/revenue-stream/hourly/sinks/sink"
)

// JSONL file names, one per table (hourly_revenue.jsonl holds the changelog).
var (
	FileHourlyRevenue = HourlyRevenue.Name + ".jsonl"
	FileTooLate       = TooLateEvents.Name + ".jsonl"
	FileConflicts     = ConflictEvents.Name + ".jsonl"
	FileQuarantined   = QuarantinedEvents.Name + ".jsonl"
	FileRunConfig     = RunConfig.Name + ".json"
	FileCheckpoints   = SourceCheckpoints.Name + ".jsonl"
	FileResume        = SourceResume.Name + ".jsonl"
)

// appendFiles are the files Write appends to.
var appendFiles = []string{FileHourlyRevenue, FileTooLate, FileConflicts, FileQuarantined, FileCheckpoints}

// JSONL is the --sink=jsonl:DIR debugging sink: one JSON object per line,
// appended; hourly_revenue.jsonl holds every accepted snapshot (a reader keeps
// the highest revision per key). The rules hold against what this process
// wrote and read at open; a second process is not coordinated.
type JSONL struct {
	mu       sync.Mutex
	dir      string
	files    map[string]*os.File
	guard    *memGuard
	readOnly bool // OpenReader's or OpenProgress's handle writes no batch
	sealer   bool // OpenProgress's handle may SealResume
}

var _ sink.Sink = (*JSONL)(nil)
var _ sink.ConfigChecker = (*JSONL)(nil)

func init() {
	registerBackend(sink.SchemeJSONL, func(_ context.Context, spec sink.Spec) (*JSONL, error) { return OpenJSONL(spec.Path) },
		func(_ context.Context, spec sink.Spec) (*JSONL, bool, error) {
			return openJSONLReader(spec.Path, false)
		},
		func(_ context.Context, spec sink.Spec) (*JSONL, bool, error) { return openJSONLReader(spec.Path, true) }, sink.Backend{})
}

// OpenJSONL opens or creates the sink directory, reading existing files so a
// restarted process keeps rejecting stale rows and written positions.
func OpenJSONL(dir string) (*JSONL, error) {
	if dir == "" {
		return nil, errors.New("jsonl sink: empty directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	j := &JSONL{dir: dir, files: map[string]*os.File{}, guard: newMemGuard()}
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

// load seeds the guard from a file. A torn last line (a crash) is skipped
// and terminated, so the next append starts a line of its own.
func (j *JSONL) load(name string, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<16)
	lineNo, bad := 0, 0
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			slog.Warn("jsonl sink: skipping a torn last line", "file", f.Name(), "line", lineNo+1)
			if _, werr := f.Write([]byte("\n")); werr != nil {
				return werr
			}
			break
		}
		if len(line) > 0 {
			lineNo++
			if !j.loadLine(name, line) {
				bad++
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if bad > 0 {
		slog.Warn("jsonl sink: skipped unreadable lines", "file", f.Name(), "lines", bad)
	}
	return nil
}

func (j *JSONL) loadLine(name string, line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || name == FileCheckpoints {
		return true // checkpoints seed no guard: a re-sent one is appended again
	}
	if name == FileHourlyRevenue {
		r, err := decodeJSONLine(changelogCodec, line)
		if err != nil {
			return false
		}
		j.guard.observe(r.Row)
		return true
	}
	var pos struct {
		SourcePosition string `json:"source_position"`
	}
	if err := json.Unmarshal(line, &pos); err != nil || pos.SourcePosition == "" {
		return false
	}
	j.guard.audit[name+"\x00"+pos.SourcePosition] = struct{}{}
	return true
}

// Write appends the accepted rows and new audit rows, one write per file
// and batch, without fsync: a debug sink.
func (j *JSONL) Write(ctx context.Context, b sink.Batch) (sink.Result, error) {
	if err := ctx.Err(); err != nil {
		return sink.Result{}, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	if err := validateBatch(b); err != nil {
		return sink.Result{}, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.readOnly {
		return sink.Result{}, fmt.Errorf("jsonl sink %s: opened for reading", j.dir)
	}
	if j.files == nil {
		return sink.Result{}, fmt.Errorf("jsonl sink %s: closed", j.dir)
	}
	st := j.guard.stage()
	now := time.Now()
	out := map[string]*bytes.Buffer{}
	var res sink.Result
	buffer := func(name string) *bytes.Buffer {
		if out[name] == nil {
			out[name] = &bytes.Buffer{}
		}
		return out[name]
	}
	accepted := st.admitRows(b.Rows)
	for _, r := range accepted {
		if err := encodeJSONLine(buffer(FileHourlyRevenue), changelogCodec, sink.ChangelogEntry{Row: r, WrittenAt: now}); err != nil {
			return sink.Result{}, fmt.Errorf("jsonl sink %s: encode %s: %w", j.dir, r.Key(), err)
		}
	}
	n1, err1 := appendAudit(st, buffer(FileTooLate), FileTooLate, tooLateCodec, b.TooLate)
	n2, err2 := appendAudit(st, buffer(FileConflicts), FileConflicts, conflictCodec, b.Conflicts)
	n3, err3 := appendAudit(st, buffer(FileQuarantined), FileQuarantined, quarantinedCodec, b.Quarantined)
	if err := errors.Join(err1, err2, err3); err != nil {
		return sink.Result{}, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	res.AuditInserted = n1 + n2 + n3
	for _, c := range b.Progress {
		if err := encodeJSONLine(buffer(FileCheckpoints), checkpointCodec, checkpointRow{Checkpoint: c, At: now}); err != nil {
			return sink.Result{}, fmt.Errorf("jsonl sink %s: encode checkpoint %s/%s: %w", j.dir, c.Partition, c.File, err)
		}
	}
	for _, name := range appendFiles {
		if buf := out[name]; buf != nil && buf.Len() > 0 {
			if _, err := j.files[name].Write(buf.Bytes()); err != nil {
				return sink.Result{}, fmt.Errorf("jsonl sink %s: append %s: %w", j.dir, name, err)
			}
		}
	}
	st.commit()
	res.Accepted, res.Stale = len(accepted), st.refused.stale
	st.refused.warn("jsonl sink", "dir", j.dir)
	return res, nil
}

// CheckRunConfig applies the run_config rule to DIR/run_config.json.
func (j *JSONL) CheckRunConfig(ctx context.Context, cfg map[string]string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	path := filepath.Join(j.dir, FileRunConfig)
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
	added, err := compareRunConfig(j.dir, have, cfg)
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
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("jsonl sink %s: write run config: %w", j.dir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("jsonl sink %s: write run config: %w", j.dir, err)
	}
	return nil
}

// Close closes the files.
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

// appendAudit encodes the records whose position is new to file.
func appendAudit[T any](st *guardStage, buf *bytes.Buffer, file string, c codec[T], recs []T) (int, error) {
	n := 0
	for _, v := range recs {
		if !st.newAudit(file, c.position(v)) {
			continue
		}
		if err := encodeJSONLine(buf, c, v); err != nil {
			return n, fmt.Errorf("encode %s %s: %w", c.t.Name, c.position(v), err)
		}
		n++
	}
	return n, nil
}
