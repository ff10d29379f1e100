package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/revenue-stream/hourly/internal/gen"
)

// ensureDemo makes sure dir holds the demo raw log (gen.Demo), generating it
// the first time into a hidden sibling renamed into place, so an interrupted
// generation leaves no partial log. An existing dir is used as it is.
func ensureDemo(dir string) (generated bool, err error) {
	switch fi, err := os.Stat(dir); {
	case err == nil && fi.IsDir():
		slog.Info("demo: replaying the existing demo log (delete the folder to generate it again)", "dir", dir)
		return false, nil
	case err == nil:
		return false, fmt.Errorf("demo: %s exists and is not a folder", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("demo: %w", err)
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return false, fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(tmp)                      // a no-op after the rename
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		return false, fmt.Errorf("demo: %w", err)
	}
	stats, err := gen.Write(tmp, gen.Demo())
	if err != nil {
		return false, fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return false, fmt.Errorf("demo: %w", err)
	}
	slog.Info("demo: generated the demo raw log once; later runs replay it",
		"dir", dir, "lines", stats.Lines, "partitions", len(stats.Partitions), "files", stats.Files)
	return true, nil
}
