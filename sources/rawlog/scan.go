package rawlog

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
)

// ScanInfo summarises one Scan: files, records handed to fn, blank lines
// skipped, and the positions of last lines without a newline (read as lines;
// a follower may still wait for them to settle).
type ScanInfo struct {
	Files, Lines, Blank int
	Unterminated        []string
}

// Scan reads one partition in arrival order and calls fn for each record
// (Partition, Position, Oversized, ReadAt; no WatermarkBefore: the Stamper
// sets it). rec.Line is valid during the call only; an error from fn stops
// the scan and is returned as is.
func Scan(dir, partition string, maxLine int, readAt int64, fn func(rec model.Record) error) (ScanInfo, error) {
	var info ScanInfo
	files, err := ListFiles(dir, partition)
	if err != nil {
		return info, err
	}
	for _, name := range files {
		if err := scanFile(dir, partition, name, maxLine, readAt, &info, fn); err != nil {
			return info, err
		}
	}
	return info, nil
}

func scanFile(dir, partition, name string, maxLine int, readAt int64, info *ScanInfo, fn func(model.Record) error) error {
	path := files.Join(PartitionDir(dir, partition), name)
	f, err := files.Open(context.Background(), path, 0)
	if err != nil {
		return fmt.Errorf("rawlog: open %s: %w", path, err)
	}
	defer f.Close()
	info.Files++
	r := NewReader(f, maxLine)
	yielded := 0
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			var ok bool
			if l, ok = r.Tail(); !ok {
				break // no last line without a newline, or a blank one
			}
			info.Unterminated = append(info.Unterminated, Position(partition, name, l.No))
		} else if err != nil {
			return fmt.Errorf("rawlog: %s: %w", path, err)
		}
		yielded++
		if err := fn(model.Record{Partition: partition, Position: Position(partition, name, l.No), Line: l.Bytes,
			Oversized: l.Oversized, ReadAt: readAt, WatermarkBefore: model.NoWatermark}); err != nil {
			return err
		}
	}
	info.Lines += yielded
	info.Blank += r.Mark().Line - yielded
	return nil
}
