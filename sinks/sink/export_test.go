package sink

import (
	"context"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// RowWriter is a write step for rows into s, as sink_test's tests drive it.
type RowWriter interface {
	ProcessElement(model.Row)
	FinishBundle(context.Context) error
}

// NewRowWriter is testFn for the tests outside the package.
func NewRowWriter(s Sink) RowWriter {
	return &writeFn[model.Row]{Spec: Spec{Scheme: SchemeConsole}, sink: s, attempts: writeAttempts, backoff: time.Millisecond, backoffCeiling: 4 * time.Millisecond}
}
