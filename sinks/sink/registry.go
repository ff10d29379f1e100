package sink

import (
	"context"
	"fmt"
	"sync"

	"github.com/revenue-stream/hourly/model"
)

// Backends is the package whose init registers every scheme ParseSpec accepts.
const Backends = "github.com/revenue-stream/hourly/sinks"

// CurrentReader is what Published needs of a backend.
type CurrentReader interface {
	CurrentRows(ctx context.Context) ([]model.Row, error)
	Close() error
}

// RangeReader is implemented by readers that filter by window_start where
// they read (an index, a partition filter) rather than in Go.
type RangeReader interface {
	CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
}

// Opener opens a sink for reading back; ok is false when it keeps nothing
// (console) or does not exist yet.
type Opener func(ctx context.Context, spec Spec) (r CurrentReader, ok bool, err error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes scheme's sinks readable by Published; backends call it from
// init. A second registration or a nil Opener panics, as in database/sql.
func Register(scheme string, open Opener) {
	if open == nil {
		panic(fmt.Sprintf("sink.Register %q: nil Opener", scheme))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic(fmt.Sprintf("sink.Register %q: registered twice", scheme))
	}
	openers[scheme] = open
}

// CheckRegistered returns Published's error for an unregistered scheme, so
// pipeline.Options.Validate refuses it before any work.
func CheckRegistered(scheme string) error {
	_, err := opener(scheme)
	return err
}

func opener(scheme string) (Opener, error) {
	mu.RLock()
	defer mu.RUnlock()
	if open, ok := openers[scheme]; ok {
		return open, nil
	}
	switch scheme {
	case SchemeSQLite, SchemeJSONL, SchemeConsole, SchemeBigQuery:
		return nil, fmt.Errorf("sink scheme %q has no backend registered in this binary: import _ %q in its main package (its init registers %s)", scheme, Backends, Forms)
	}
	return nil, fmt.Errorf("unknown sink scheme %q: want %s", scheme, Forms)
}
