package rawlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
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
			if err := resolveFile(files.Join(pdir, SidecarName(name)), part, name, want, out); err != nil {
				return nil, err
			}
			if len(out) == len(want) {
				return out, nil
			}
		}
	}
	return out, nil
}

func resolveFile(path, part, name string, want, out map[string]string) error {
	f, err := files.Open(context.Background(), path, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a file without a sidecar names no ids
	}
	if err != nil {
		return fmt.Errorf("rawlog: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for line := 1; ; line++ {
		id, err := br.ReadString('\n')
		if err != nil {
			return nil // the end, or a torn last line: its archive line was never acknowledged
		}
		id, _, _ = strings.Cut(strings.TrimSuffix(id, "\n"), "\t")
		if pos, ok := want[id]; ok {
			out[pos] = Position(part, name, line)
		}
	}
}
