// Package collect gathers a pipeline's output elements in the test process.
// Prism runs the Go SDK harness in loopback mode, in the same process as the
// test, so a DoFn can append to a process-wide registry that the test reads
// after the run. Each collection gets a unique name per test.
package collect

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

var (
	mu    sync.Mutex
	store = map[string][]any{}
	seq   atomic.Int64
)

func init() {
	register.DoFn1x0[model.Row](&collectFn[model.Row]{})
	register.DoFn1x0[model.TooLate](&collectFn[model.TooLate]{})
	register.DoFn1x0[model.Conflict](&collectFn[model.Conflict]{})
	register.DoFn1x0[model.Quarantined](&collectFn[model.Quarantined]{})
	register.DoFn1x0[model.Event](&collectFn[model.Event]{})
}

type collectFn[T any] struct {
	Name string
}

func (f *collectFn[T]) ProcessElement(v T) {
	mu.Lock()
	defer mu.Unlock()
	store[f.Name] = append(store[f.Name], v)
}

// Handle reads back what a collection received.
type Handle[T any] struct{ name string }

// Into attaches a collecting DoFn to col and returns the handle to read it.
func Into[T any](s beam.Scope, col beam.PCollection, label string) Handle[T] {
	name := fmt.Sprintf("%s#%d", label, seq.Add(1))
	beam.ParDo0(s.Scope("Collect"+label), &collectFn[T]{Name: name}, col)
	return Handle[T]{name: name}
}

// Values returns a copy of the collected elements, in arrival order.
func (h Handle[T]) Values() []T {
	mu.Lock()
	defer mu.Unlock()
	out := make([]T, 0, len(store[h.name]))
	for _, v := range store[h.name] {
		out = append(out, v.(T))
	}
	return out
}

// Counts reads a finished pipeline's committed revenue Counts (nil: none).
func Counts(pr beam.PipelineResult) metrics.Counts {
	if pr == nil {
		return metrics.CountsOf(map[string]int64{})
	}
	c, _, _ := metrics.Committed(pr.Metrics())
	return c
}
