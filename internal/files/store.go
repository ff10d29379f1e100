package files

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/revenue-stream/hourly/model"
)

// Store is what this package needs of an object store beyond Beam's
// filesystem for its scheme: ranged reads (ReadRanges) and its not-found
// errors (as fs.ErrNotExist).
type Store struct {
	// Ranges opens an object (a path's bucket and object name) for ranged
	// reads: open streams one range's bytes, from a ranged request of its own.
	Ranges func(ctx context.Context, bucket, object string) (open func(model.LineRef) (io.ReadCloser, error), err error)
	// NotExist reports whether err says that an object or its bucket does
	// not exist.
	NotExist func(err error) bool
}

// stores holds the registered Stores by scheme ("gs://").
var stores sync.Map

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
	if s.Ranges == nil || s.NotExist == nil {
		panic(fmt.Sprintf("files.RegisterStore %q: incomplete Store", scheme))
	}
	if _, dup := stores.LoadOrStore(scheme+"://", s); dup {
		panic(fmt.Sprintf("files.RegisterStore %q: registered twice", scheme))
	}
}

// storeFor returns the Store of a scheme() value ("gs://").
func storeFor(scheme string) (Store, bool) {
	s, ok := stores.Load(scheme)
	if !ok {
		return Store{}, false
	}
	return s.(Store), true
}

func registered(scheme string) bool {
	_, ok := storeFor(scheme)
	return ok
}

// registeredSchemes lists the registered schemes ("gs://"), sorted.
func registeredSchemes() []string {
	var out []string
	stores.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	slices.Sort(out)
	return out
}
