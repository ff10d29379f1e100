package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// Remove deletes the file at path. A file that is not there is no error:
// callers remove what they wrote and may run twice.
func Remove(ctx context.Context, path string) error {
	if IsLocal(path) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	f, err := filesystemFor(path)
	if err != nil {
		return err
	}
	r, ok := f.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("remove %s: the %s filesystem cannot remove files", path, scheme(path))
	}
	if err := notExist(r.Remove(ctx, path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
