package report

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/internal/files"
	_ "github.com/revenue-stream/hourly/internal/files/gcs" // gs:// paths
	_ "github.com/revenue-stream/hourly/internal/files/s3"  // s3:// paths
)

// formats maps an extension (lower case) to its renderer.
var formats = map[string]func(io.Writer, Run) error{
	".html": writeHTML,
	".md":   writeMarkdown,
	".json": writeJSON,
}

// render lays the content out with a template.
func render(form string, execute func(io.Writer, any) error) func(io.Writer, Run) error {
	return func(w io.Writer, r Run) error {
		if err := execute(w, newContent(r)); err != nil {
			return fmt.Errorf("render %s: %w", form, err)
		}
		return nil
	}
}

// Extensions lists the accepted extensions, sorted.
func Extensions() []string { return slices.Sorted(maps.Keys(formats)) }

// CheckPath refuses an unknown extension or a missing local folder, before any work.
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
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%q: folder %s does not exist", path, dir)
	}
	return nil
}

// CheckFlag is CheckPath for a command's --report, the error naming the flag ("": no report, nil).
func CheckFlag(path string) error {
	if path == "" {
		return nil
	}
	if err := CheckPath(path); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// Write renders r to path (local or gs://...) in the form its extension names. A reader never sees
// half a report (files.WriteFile).
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
