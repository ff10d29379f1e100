package rawlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/revenue-stream/hourly/internal/files"
)

// RootPartition names the partition of the files directly inside a folder.
const RootPartition = "."

// Position is the stable source position of a line, "<partition>/<file>:<line>"
// ("<file>:<line>" in the root partition), which keys audit rows.
// One allocation a line: the string, built in a buffer on the stack.
func Position(partition, file string, line int) string {
	var a [96]byte
	b := a[:0]
	if partition != RootPartition && partition != "" {
		b = append(append(b, partition...), '/')
	}
	b = append(append(b, file...), ':')
	return string(strconv.AppendInt(b, int64(line), 10))
}

// ParsePosition splits a file position made by Position (ok false for an
// IDPosition).
func ParsePosition(pos string) (partition, file string, line int, ok bool) {
	if _, named := ParseIDPosition(pos); named {
		return "", "", 0, false
	}
	i := strings.LastIndexByte(pos, ':')
	if i <= 0 {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(pos[i+1:])
	if err != nil || n < 1 {
		return "", "", 0, false
	}
	partition, file, nested := strings.Cut(pos[:i], "/")
	if !nested {
		partition, file = RootPartition, partition
	}
	if file == "" || partition == "" {
		return "", "", 0, false
	}
	return partition, file, n, true
}

// ComparePositions orders positions by partition, file and line number
// (numerically): arrival order within a partition, and reconcile's "lowest
// source_position" across them. Other positions sort after, by their text.
func ComparePositions(a, b string) int {
	pa, fa, la, oka := ParsePosition(a)
	pb, fb, lb, okb := ParsePosition(b)
	switch {
	case oka && okb:
		return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(fa, fb), cmp.Compare(la, lb))
	case oka:
		return -1
	case okb:
		return 1
	}
	return cmp.Compare(a, b)
}

// Ignored reports whether a file or folder name is skipped (package doc).
func Ignored(name string) bool {
	return name == "" ||
		strings.HasPrefix(name, ".") ||
		strings.HasPrefix(name, "_") ||
		strings.HasSuffix(name, ".tmp") ||
		strings.HasSuffix(name, "~")
}

// PartitionDir is the folder holding a partition's files.
func PartitionDir(dir, partition string) string {
	if partition == RootPartition {
		return dir
	}
	return files.Join(dir, partition)
}

// ListPartitions returns a folder's partitions, sorted: its non-ignored
// subfolders, plus RootPartition when files lie directly inside it.
func ListPartitions(dir string) ([]string, error) {
	l, err := files.List(context.Background(), dir)
	if err != nil {
		return nil, fmt.Errorf("rawlog: list partitions of %s: %w", dir, err)
	}
	parts := slices.DeleteFunc(l.Dirs, Ignored)
	if slices.ContainsFunc(l.Files, func(name string) bool { return !Ignored(name) }) {
		parts = append(parts, RootPartition)
	}
	slices.Sort(parts) // "." in its place
	return parts, nil
}

// ErrNoPartitions is ReadablePartitions' refusal of a folder without partitions.
var ErrNoPartitions = errors.New("no partitions yet: the folder holds no raw-log file and no partition subfolder; create a partition subfolder (or a first file) before starting")

// ReadablePartitions is ListPartitions for a run that reads dir (launch,
// reconcile), refusing a folder without partitions (ErrNoPartitions): a
// replay would read nothing, and a follower's watermark, with no partition
// to hold it, would follow processing time and its first data be too late.
func ReadablePartitions(dir string) ([]string, error) {
	parts, err := ListPartitions(dir)
	if err == nil && len(parts) == 0 {
		err = ErrNoPartitions
	}
	return parts, err
}

// ListFiles returns a partition's readable files in lexical order.
func ListFiles(dir, partition string) ([]string, error) {
	l, err := files.List(context.Background(), PartitionDir(dir, partition))
	if err != nil {
		return nil, fmt.Errorf("rawlog: list files of partition %q: %w", partition, err)
	}
	return slices.DeleteFunc(l.Files, Ignored), nil // the listing is sorted by name
}
