package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/io/files"
	_ "github.com/revenue-stream/hourly/io/files/gcs" // gs:// paths
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

// CheckPath refuses a path whose extension names no form, or whose local
// folder does not exist, so that both commands refuse a bad --report the
// same way, before any work.
func CheckPath(path string) error {
	if _, ok := formats[strings.ToLower(filepath.Ext(path))]; !ok {
		return fmt.Errorf("%q: want a path ending in %s", path, strings.Join(Extensions(), ", "))
	}
	if !files.IsLocal(path) {
		if err := files.Check(path); err != nil {
			return fmt.Errorf("%q: %w", path, err)
		}
		return nil
	}
	// Checked before any work, so that a run does not end, its work done,
	// unable to write its report.
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%q: folder %s does not exist", path, dir)
	}
	return nil
}

// Write renders r to path in the form its extension names (.html, .md or
// .json, in any case). The path may be local or on any filesystem Beam
// serves (gs://...). A reader or a crashed run never sees half a report, and
// an older report at path stays whole until the new one is complete (see
// files.WriteFile).
func Write(path string, r Run) error {
	if err := CheckPath(path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	render := formats[strings.ToLower(filepath.Ext(path))]
	if err := files.WriteFile(context.Background(), path, func(w io.Writer) error { return render(w, r) }); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}
