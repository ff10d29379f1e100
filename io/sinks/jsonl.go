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

	"github.com/revenue-stream/hourly/model"
)

// JSONL file names inside the sink directory, one per SPEC §5 table.
const (
	FileHourlyRevenue = "hourly_revenue.jsonl"
	FileTooLate       = "too_late_events.jsonl"
	FileConflicts     = "conflict_events.jsonl"
	FileQuarantined   = "quarantined_events.jsonl"
	FileRunConfig     = "run_config.json"
)

// JSONL is the --sink=jsonl:DIR debugging sink: one JSON object per line,
// appended. hourly_revenue.jsonl is a changelog (every accepted snapshot,
// never a delta: a reader keeps the highest revision per key and must not
// sum lines). The revision, no-dip and audit-once rules are enforced against
// what this process wrote plus what the files held when it opened them; a
// second process appending to the same directory is not coordinated.
type JSONL struct {
	mu    sync.Mutex
	dir   string
	files map[string]*os.File
	guard *memGuard
}

var _ Sink = (*JSONL)(nil)
var _ ConfigChecker = (*JSONL)(nil)

// jsonRow is a line of hourly_revenue.jsonl: the changelog columns.
type jsonRow struct {
	WindowStart   string `json:"window_start"`
	WindowEnd     string `json:"window_end"`
	Dims          string `json:"dims"`
	Revenue       string `json:"revenue"`
	RevenueMicros int64  `json:"revenue_micros"`
	EventCount    int64  `json:"event_count"`
	Revision      int64  `json:"revision"`
	ResultState   string `json:"result_state"`
	WrittenAt     string `json:"written_at"`
	Writer        string `json:"writer"`
}

type jsonTooLate struct {
	SourcePosition string `json:"source_position"`
	EventID        string `json:"event_id"`
	EventTime      string `json:"event_time"`
	Payload        string `json:"payload"`
	Reason         string `json:"reason"`
}

type jsonConflict struct {
	SourcePosition         string `json:"source_position"`
	EventID                string `json:"event_id"`
	FirstFingerprint       string `json:"first_fingerprint"`
	ConflictingFingerprint string `json:"conflicting_fingerprint"`
	Payload                string `json:"payload"`
}

type jsonQuarantined struct {
	SourcePosition string `json:"source_position"`
	Payload        string `json:"payload"`
	Reason         string `json:"reason"`
}

// OpenJSONL opens (creating if needed) the JSONL sink directory. Existing
// files are read back first so a restarted process keeps rejecting stale
// revisions and already-written audit positions.
func OpenJSONL(dir string) (*JSONL, error) {
	if dir == "" {
		return nil, errors.New("jsonl sink: empty directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	j := &JSONL{dir: dir, files: map[string]*os.File{}, guard: newMemGuard()}
	for _, name := range []string{FileHourlyRevenue, FileTooLate, FileConflicts, FileQuarantined} {
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

// load seeds the guard from an existing file. A last line without a newline
// (a write cut short by a crash) is skipped and terminated, so the next
// append starts on a line of its own.
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
	if len(line) == 0 {
		return true
	}
	if name == FileHourlyRevenue {
		var jr jsonRow
		if err := json.Unmarshal(line, &jr); err != nil {
			return false
		}
		ws, err1 := parseTime(jr.WindowStart)
		state, err2 := model.ParseResultState(jr.ResultState)
		if err1 != nil || err2 != nil {
			return false
		}
		j.guard.observe(model.Row{WindowStart: ws, Dims: jr.Dims, EventCount: jr.EventCount, Revision: jr.Revision, State: state})
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

// Write appends the batch's accepted rows and new audit rows. Each file gets
// one write call per batch; the files are not fsynced, this is a debug sink.
func (j *JSONL) Write(ctx context.Context, b Batch) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	if err := validateBatch(b); err != nil {
		return Result{}, fmt.Errorf("jsonl sink %s: %w", j.dir, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.files == nil {
		return Result{}, fmt.Errorf("jsonl sink %s: closed", j.dir)
	}
	st := j.guard.stage()
	now := wallTime(time.Now())
	out := map[string]*bytes.Buffer{}
	var res Result
	emit := func(name string, v any) error {
		buf := out[name]
		if buf == nil {
			buf = &bytes.Buffer{}
			out[name] = buf
		}
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false) // payloads stay readable: no \u003c for '<'
		return enc.Encode(v)
	}
	accepted := st.admitRows(b.Rows)
	for _, r := range accepted {
		if err := emit(FileHourlyRevenue, jsonRow{
			WindowStart: model.FormatTime(r.WindowStart), WindowEnd: model.FormatTime(r.WindowEnd),
			Dims: r.Dims, Revenue: model.FormatMicros(r.RevenueMicros), RevenueMicros: r.RevenueMicros,
			EventCount: r.EventCount, Revision: r.Revision, ResultState: r.State.String(),
			WrittenAt: now, Writer: writerOf(r),
		}); err != nil {
			return Result{}, fmt.Errorf("jsonl sink %s: encode %s: %w", j.dir, r.Key(), err)
		}
	}
	for _, t := range b.TooLate {
		if !st.newAudit(FileTooLate, t.Position) {
			continue
		}
		if err := emit(FileTooLate, jsonTooLate{t.Position, t.EventID, model.FormatTime(t.EventTime), string(t.Payload), tooLateReason(t)}); err != nil {
			return Result{}, fmt.Errorf("jsonl sink %s: encode too_late %s: %w", j.dir, t.Position, err)
		}
		res.AuditInserted++
	}
	for _, c := range b.Conflicts {
		if !st.newAudit(FileConflicts, c.Position) {
			continue
		}
		if err := emit(FileConflicts, jsonConflict{c.Position, c.EventID, model.FingerprintHex(c.FirstFingerprint),
			model.FingerprintHex(c.ConflictingFingerprint), string(c.Payload)}); err != nil {
			return Result{}, fmt.Errorf("jsonl sink %s: encode conflict %s: %w", j.dir, c.Position, err)
		}
		res.AuditInserted++
	}
	for _, q := range b.Quarantined {
		if !st.newAudit(FileQuarantined, q.Position) {
			continue
		}
		if err := emit(FileQuarantined, jsonQuarantined{q.Position, string(q.Payload), q.Reason}); err != nil {
			return Result{}, fmt.Errorf("jsonl sink %s: encode quarantined %s: %w", j.dir, q.Position, err)
		}
		res.AuditInserted++
	}
	for _, name := range []string{FileHourlyRevenue, FileTooLate, FileConflicts, FileQuarantined} {
		if buf := out[name]; buf != nil {
			if _, err := j.files[name].Write(buf.Bytes()); err != nil {
				return Result{}, fmt.Errorf("jsonl sink %s: append %s: %w", j.dir, name, err)
			}
		}
	}
	st.commit()
	res.Accepted, res.Stale = len(accepted), st.stale
	if st.regressions > 0 {
		slog.Warn("jsonl sink: rejected rows that would lower a count or move a state back", "dir", j.dir, "rows", st.regressions)
	}
	return res, nil
}

// CheckRunConfig applies the SQLite sink's run_config rule to
// DIR/run_config.json.
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
	// Write then rename, so a crash never leaves a half-written config.
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
