package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// formats maps an extension (lower case) to its renderer.
var formats = map[string]func(io.Writer, Run) error{
	".html": writeHTML,
	".md":   writeMarkdown,
	".json": writeJSON,
}

// Extensions lists the accepted extensions, sorted, for flag validation and
// messages.
func Extensions() []string {
	out := make([]string, 0, len(formats))
	for ext := range formats {
		out = append(out, ext)
	}
	slices.Sort(out)
	return out
}

// Write renders r to path in the form its extension names (.html, .md or
// .json, in any case). The file is written beside its final name and renamed
// into place, so a reader or a crashed run never sees half a report, and an
// older report at path stays whole until the new one is complete.
func Write(path string, r Run) error {
	ext := strings.ToLower(filepath.Ext(path))
	render, ok := formats[ext]
	if !ok {
		return fmt.Errorf("report: %q: unknown extension %q: want one of %s", path, ext, strings.Join(Extensions(), ", "))
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("report: create %s: %w", path, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := render(bw, r); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; a report is meant to be shared.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("report: chmod %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: close %s: %w", tmp, err)
	}
	done = true
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: rename %s to %s: %w", tmp, path, err)
	}
	return nil
}
