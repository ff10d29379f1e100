package sink

import (
	"context"
	"fmt"
	"sync"

	"github.com/revenue-stream/hourly/model"
)

// Backends is the package whose init registers every scheme ParseSpec
// accepts: a binary that reads or writes a sink imports it (for its side
// effect, where it uses nothing else of it).
const Backends = "github.com/revenue-stream/hourly/io/sinks"

// CurrentReader is a sink opened to read back the current row of every key
// it holds: what Published needs of a backend.
type CurrentReader interface {
	CurrentRows(ctx context.Context) ([]model.Row, error)
	Close() error
}

// RangeReader is implemented by readers that filter by window_start where
// they read (an index, a partition filter) rather than in Go.
type RangeReader interface {
	CurrentRowsFrom(ctx context.Context, windowStart int64) ([]model.Row, error)
}

// Opener opens the sink spec names for reading back. ok is false, with a
// nil reader, when the sink keeps nothing to read back (console) or does
// not exist yet: opening it would create an empty one.
type Opener func(ctx context.Context, spec Spec) (r CurrentReader, ok bool, err error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes scheme's sinks readable by Published. A backend calls it
// from its init, so that every process of a binary that imports the
// backend, the workers included, has it. Registering a scheme twice, or a
// nil Opener, panics, as database/sql.Register does: both are programming
// errors of the binary.
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

// CheckRegistered returns the error Published would return for a scheme
// no backend registered, nil for a registered one: a launcher calls it (through
// pipeline.Options.Validate) to refuse such a spec before any work.
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
