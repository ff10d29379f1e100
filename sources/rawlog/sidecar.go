package rawlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/revenue-stream/hourly/internal/files"
)

// NamedPartition is the Pub/Sub archive's partition, whose records the
// stream positions "pubsub:<message id>" (ids kept in sidecars).
const NamedPartition = "pubsub"

// SidecarName is the hidden file beside a raw-log file holding on line N the
// source's id of line N (then a TAB and what else the source keeps).
func SidecarName(file string) string { return "." + file + ".ids" }

// IDPosition is the position of a record its source names by id.
func IDPosition(id string) string { return NamedPartition + ":" + id }

// ParseIDPosition returns the id of an IDPosition.
func ParseIDPosition(pos string) (id string, ok bool) {
	id, ok = strings.CutPrefix(pos, NamedPartition+":")
	return id, ok && id != ""
}

// ResolveIDPositions maps the IDPositions among positions to the file
// positions of the raw log in dir ("pubsub/<file>:<line>") through the id
// sidecars; other positions and unknown ids are absent from the result.
func ResolveIDPositions(dir string, positions []string) (map[string]string, error) {
	want := map[string]string{} // id -> position asked for
	for _, p := range positions {
		if id, ok := ParseIDPosition(p); ok {
			want[id] = p
		}
	}
	out := map[string]string{}
	if len(want) == 0 {
		return out, nil
	}
	parts, err := ListPartitions(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, part := range parts {
		// "pubsub", and "pubsub-NN" for several reader keys.
		if part != NamedPartition && !strings.HasPrefix(part, NamedPartition+"-") {
			continue
		}
		names, err := ListFiles(dir, part)
		if err != nil {
			return nil, err
		}
		pdir := PartitionDir(dir, part)
		for _, name := range names {
			side, err := ReadSidecar(context.Background(), pdir, name)
			if err != nil {
				return nil, err
			}
			for i, e := range side {
				if pos, ok := want[e.ID]; ok {
					out[pos] = Position(part, name, i+1)
				}
			}
			if len(out) == len(want) {
				return out, nil
			}
		}
	}
	return out, nil
}

// SidecarEntry is what an id sidecar keeps for each line of its file: the source's id (position
// IDPosition(ID)), and for the Pub/Sub archive the publish time and backlog flag, so a replay
// gives every record the stream's position and WatermarkBefore.
type SidecarEntry struct {
	ID      string
	Publish int64 // epoch ms
	Backlog bool
}

// Append appends the entry's sidecar line: "<id>\t<publish ms>[\tB]".
func (e SidecarEntry) Append(b []byte) []byte {
	b = append(b, e.ID...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, e.Publish, 10)
	if e.Backlog {
		b = append(b, "\tB"...)
	}
	return append(b, '\n')
}

// ReadSidecar reads the entries of the sidecar of file in the partition folder pdir, entry N for
// the file's line N; none when the file has none. A torn last line, whose line in the file was
// never acknowledged, is left out. A read that fails before the end is an error, never a
// shorter sidecar.
func ReadSidecar(ctx context.Context, pdir, file string) ([]SidecarEntry, error) {
	f, err := files.Open(ctx, files.Join(pdir, SidecarName(file)), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rawlog: sidecar of %s: %w", file, err)
	}
	defer f.Close()
	var side []SidecarEntry
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadString('\n')
		if errors.Is(err, io.EOF) {
			return side, nil // the end, or a torn last line
		}
		if err != nil { // not the end: the rest is unknown
			return nil, fmt.Errorf("rawlog: sidecar of %s: %w", file, err)
		}
		id, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		pub, flag, _ := strings.Cut(rest, "\t")
		ms, _ := strconv.ParseInt(pub, 10, 64)
		side = append(side, SidecarEntry{ID: id, Publish: ms, Backlog: flag == "B"})
	}
}
