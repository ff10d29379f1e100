package sinks

import (
	"bufio"
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
)

// openJSONLReader opens an existing directory read-only: it creates nothing
// and leaves a torn last line (a running writer's append). ok is false when
// the directory does not exist.
func openJSONLReader(dir string, sealer bool) (*JSONL, bool, error) {
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("jsonl sink %s: %w", dir, err)
	}
	return &JSONL{dir: dir, readOnly: true, sealer: sealer}, true, nil
}

// readJSONLFile decodes every complete line of a sink file (none if missing).
func readJSONLFile[T any](dir, file string, c codec[T]) ([]T, error) {
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
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // audit lines carry payloads
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		v, err := decodeJSONLine(c, line)
		if err != nil {
			return nil, fmt.Errorf("jsonl sink %s: %s:%d: %w", dir, file, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("jsonl sink %s: %s: %w", dir, file, err)
	}
	return out, nil
}

// Changelog returns every accepted snapshot, ordered by key then revision.
func (j *JSONL) Changelog(context.Context) ([]model.Row, error) {
	rows, err := readJSONLFile(j.dir, FileHourlyRevenue, changelogCodec)
	if err != nil {
		return nil, err
	}
	return sortedRows(snapshots(rows)), nil
}

// CurrentRows returns the highest revision of every key, ordered by
// window_start then dims.
func (j *JSONL) CurrentRows(ctx context.Context) ([]model.Row, error) {
	log, err := j.Changelog(ctx)
	if err != nil {
		return nil, err
	}
	var out []model.Row
	for i, r := range log {
		if i+1 == len(log) || log[i+1].WindowStart != r.WindowStart || log[i+1].Dims != r.Dims {
			out = append(out, r)
		}
	}
	return out, nil
}

// FinalHorizon returns the latest window_end among current FINAL rows (see
// SQLite.FinalHorizon).
func (j *JSONL) FinalHorizon(ctx context.Context) (windowEndMs int64, ok bool, err error) {
	rows, err := j.CurrentRows(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, r := range rows {
		if r.State == model.Final && (!ok || r.WindowEnd > windowEndMs) {
			windowEndMs, ok = r.WindowEnd, true
		}
	}
	return windowEndMs, ok, nil
}

// TooLate returns the too_late_events rows ordered by source_position.
func (j *JSONL) TooLate(context.Context) ([]model.TooLate, error) {
	return readJSONLAudit(j.dir, FileTooLate, tooLateCodec)
}

// Conflicts returns the conflict_events rows ordered by source_position.
func (j *JSONL) Conflicts(context.Context) ([]model.Conflict, error) {
	return readJSONLAudit(j.dir, FileConflicts, conflictCodec)
}

// Quarantined returns the quarantined_events rows ordered by source_position.
func (j *JSONL) Quarantined(context.Context) ([]model.Quarantined, error) {
	return readJSONLAudit(j.dir, FileQuarantined, quarantinedCodec)
}

// readJSONLAudit reads an audit file, the first row per source_position.
func readJSONLAudit[T any](dir, file string, c codec[T]) ([]T, error) {
	recs, err := readJSONLFile(dir, file, c)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(recs, func(a, b T) int { return strings.Compare(c.position(a), c.position(b)) })
	return slices.CompactFunc(recs, func(a, b T) bool { return c.position(a) == c.position(b) }), nil
}
