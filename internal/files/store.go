package files

import (
	"context"
	"fmt"
	"io"

	"github.com/revenue-stream/hourly/model"
)

// Store is what this package needs of an object store beyond Beam's
// filesystem for its scheme: ranged reads (ReadRanges), listings that start
// at a name (ListAfter) and its not-found errors (as fs.ErrNotExist).
type Store struct {
	// Ranges opens an object (a path's bucket and object name) for ranged
	// reads: open streams one range's bytes, from a ranged request of its own.
	Ranges func(ctx context.Context, bucket, object string) (open func(model.LineRef) (io.ReadCloser, error), err error)
	// ListFrom is one listing of the objects directly under prefix ("" or
	// ending in "/") from the name start on (start itself may come too):
	// their names without prefix, in order.
	ListFrom func(ctx context.Context, bucket, prefix, start string) ([]string, error)
	// NotExist reports whether err says that an object or its bucket does
	// not exist.
	NotExist func(err error) bool
}

// stores holds the registered Stores by scheme ("gs://"): written only by
// the inits that call RegisterStore, so read without a lock.
var stores = map[string]Store{}

// storePackages names the packages serving a scheme this package does not
// import (transforms and pipeline must not link the GCS or AWS clients), for
// the error of a binary that did not import them.
var storePackages = map[string]string{
	"gs://": "github.com/revenue-stream/hourly/internal/files/gcs",
	"s3://": "github.com/revenue-stream/hourly/internal/files/s3",
}

// RegisterStore registers the Store of scheme ("gs", "s3"), from the init of
// the package that also imports Beam's filesystem of the scheme. A second
// registration panics.
func RegisterStore(scheme string, s Store) {
	if s.Ranges == nil || s.ListFrom == nil || s.NotExist == nil {
		panic(fmt.Sprintf("files.RegisterStore %q: incomplete Store", scheme))
	}
	if _, dup := stores[scheme+"://"]; dup {
		panic(fmt.Sprintf("files.RegisterStore %q: registered twice", scheme))
	}
	stores[scheme+"://"] = s
}

// unimported is the error of a scheme ("gs://") whose Store's package this
// binary does not import, or nil.
func unimported(scheme string) error {
	if _, ok := stores[scheme]; ok || storePackages[scheme] == "" {
		return nil
	}
	return fmt.Errorf("no filesystem serves %s paths in this binary: import _ %q in its main package", scheme, storePackages[scheme])
}
