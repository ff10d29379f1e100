package rawlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// DefaultMaxLine is the default --max-line (1 MiB).
const DefaultMaxLine = event.DefaultMaxLine

// PrefixLimit is how much of an oversized line a reader keeps for quarantine.
const PrefixLimit = event.MaxPayloadPrefix

// Line is one complete, non-blank line.
type Line struct {
	// No is the 1-based line number in the file, blank lines included.
	No int
	// Bytes is the content without "\n" and a trailing "\r" (oversized: a
	// prefix), valid until the next call to Next.
	Bytes []byte
	// Oversized says the content was longer than maxLine.
	Oversized bool
	// Start is the byte offset of the line's first byte; End the offset
	// just after its "\n" (a Mark.Offset).
	Start, End int64
}

// Record is the line as a record of partition at position, read at readAt
// (epoch ms) from the file at path, with a copy of its content and, unless
// oversized, where that lies in the file, so the payload can be read back
// instead of carried. Both readers build their records here.
func (l Line) Record(partition, position, path string, readAt int64) model.Record {
	rec := model.Record{Partition: partition, Position: position, Line: bytes.Clone(l.Bytes), Oversized: l.Oversized, ReadAt: readAt}
	if !l.Oversized {
		rec.Ref = model.LineRef{Path: path, Offset: l.Start, Length: len(l.Bytes)}
	}
	return rec
}

// Mark is how far a Reader has consumed complete lines: a follower can
// reopen the file at Offset with NewReaderAt, numbering lines on from Line.
type Mark struct {
	Offset int64 // bytes through the last complete line's "\n"
	Line   int   // number of complete lines consumed, blank ones included
}

// Reader yields the complete lines of one file with the rules of the package
// doc, holding at most maxLine+2 bytes of a line.
type Reader struct {
	br      *bufio.Reader
	maxLine int
	mark    Mark

	// The line being assembled; it survives io.EOF so a follower gets its
	// rest once the file has grown.
	buf  []byte
	n    int64 // bytes of the current line consumed from br
	over bool  // the current line is already known to be oversized
}

// NewReader reads r from its start. maxLine <= 0 means DefaultMaxLine.
func NewReader(r io.Reader, maxLine int) *Reader {
	return NewReaderAt(r, maxLine, Mark{})
}

// NewReaderAt reads r, which the caller has positioned at m.Offset, as the
// continuation of a file of which m.Line lines were already consumed.
func NewReaderAt(r io.Reader, maxLine int, m Mark) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, mark: m}
}

// Mark reports how far complete lines have been consumed.
func (r *Reader) Mark() Mark { return r.mark }

// Pending is the number of bytes read past Mark: after io.EOF, an
// unterminated last line (see Tail).
func (r *Reader) Pending() int64 { return r.n }

// Next returns the next complete, non-blank line, or io.EOF when the input
// is exhausted (an unterminated last line included: see Tail); it may be
// called again once the input has grown.
func (r *Reader) Next() (Line, error) {
	for {
		for {
			chunk, err := r.br.ReadSlice('\n')
			r.n += int64(len(chunk))
			if !r.over {
				// Keep content + "\r\n" at most; beyond, only the prefix.
				if len(r.buf)+len(chunk) <= r.maxLine+2 {
					r.buf = append(r.buf, chunk...)
				} else {
					r.over = true
					if len(r.buf) < PrefixLimit {
						r.buf = append(r.buf, chunk[:min(len(chunk), PrefixLimit-len(r.buf))]...)
					}
				}
			}
			if err == nil {
				break // chunk ends in '\n'
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				return Line{}, io.EOF
			}
			return Line{}, fmt.Errorf("rawlog: read line %d: %w", r.mark.Line+1, err)
		}

		if line, ok := r.take(true); ok {
			return line, nil
		}
	}
}

// Tail yields the last line of an input that ended without a newline, after
// Next returned io.EOF (SPEC §3). ok is false when there is none or it is
// blank; either way the mark moves past it.
func (r *Reader) Tail() (line Line, ok bool) {
	if r.n == 0 {
		return Line{}, false
	}
	return r.take(false)
}

// take ends the line being assembled and advances the mark past it; ok is
// false for a blank line.
func (r *Reader) take(terminated bool) (Line, bool) {
	line := Line{No: r.mark.Line + 1, Start: r.mark.Offset, End: r.mark.Offset + r.n}
	r.mark = Mark{Offset: line.End, Line: line.No}
	content, over := r.buf, r.over
	if int64(len(content)) == r.n { // the whole line, newline included
		if terminated {
			content = content[:len(content)-1]
		}
		if k := len(content); k > 0 && content[k-1] == '\r' {
			content = content[:k-1]
		}
		over = over || len(content) > r.maxLine
	}
	r.buf, r.n, r.over = r.buf[:0], 0, false

	if over {
		line.Bytes, line.Oversized = content[:min(len(content), PrefixLimit)], true
		return line, true
	}
	if Blank(content) {
		return Line{}, false
	}
	line.Bytes = content
	return line, true
}

// Blank reports whether a line is skipped: empty or only JSON whitespace.
func Blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

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

// Stamper gives one partition's records, in arrival order, their
// WatermarkBefore (the partition watermark just before the record, which
// rule (a) of SPEC §4 and --max-age judge), validating them since only a
// valid event time advances it. Every reader stamps through this one type.
type Stamper struct {
	wm  *watermark.Partition
	cfg event.Config
}

// NewStamper starts a partition that has seen nothing; now (epoch ms) seeds
// its idleness clock. cfg must be valid.
func NewStamper(p watermark.Policy, cfg event.Config, now int64) *Stamper {
	return ResumeStamper(p, cfg, watermark.NewState(now))
}

// ResumeStamper continues a partition from the watermark state a reader
// carried in its restriction.
func ResumeStamper(p watermark.Policy, cfg event.Config, s watermark.State) *Stamper {
	return &Stamper{wm: watermark.Resume(p, s), cfg: cfg}
}

// Stamp sets rec.WatermarkBefore, validates the record and advances the
// watermark with it if valid. rec.ReadAt must be set (the future check).
func (s *Stamper) Stamp(rec *model.Record) (model.Event, *model.Quarantined) {
	rec.WatermarkBefore = s.wm.Before()
	ev, q := event.Parse(*rec, s.cfg)
	s.wm.Observe(ev.EventTime, q == nil, rec.ReadAt)
	return ev, q
}

// StampRecord is Stamp for a source: the verdict goes into rec.Valid or
// rec.Rejected, so validation downstream does not parse the line again.
func (s *Stamper) StampRecord(rec *model.Record) {
	ev, q := s.Stamp(rec)
	rec.Valid, rec.Rejected = nil, q
	if q == nil {
		rec.Valid = &ev
	}
}

// Watermark is the partition watermark after the records stamped so far.
func (s *Stamper) Watermark() int64 { return s.wm.Watermark() }

// Partition exposes the watermark state for sources that report it.
func (s *Stamper) Partition() *watermark.Partition { return s.wm }
