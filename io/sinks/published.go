package sinks

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
)

func init() {
	register.DoFn3x1[context.Context, []byte, func(model.Row), error](&readPublishedFn{})
}

// ReadPublished reads, when the job runs and on a worker, the current row of
// every key the sink holds: what the revision step continues from after a
// restart or a second replay (revisions go on from the stored one, nothing
// dips, a window held as FINAL stays closed). A FINAL row is only a closed
// marker to that step, so it comes without its totals. Reading it in the
// pipeline keeps the sink's history out of the job graph, whose size would
// otherwise grow with every key ever stored (Dataflow caps a job request at
// a few MB). A sink that keeps nothing to read back (console, jsonl, a
// SQLite file not created yet) gives no rows.
func ReadPublished(s beam.Scope, spec Spec) beam.PCollection {
	s = s.Scope("sinks.ReadPublished")
	return beam.ParDo(s, &readPublishedFn{Spec: spec}, beam.Impulse(s))
}

type readPublishedFn struct {
	Spec Spec
}

func (f *readPublishedFn) ProcessElement(ctx context.Context, _ []byte, emit func(model.Row)) error {
	db, ok, err := OpenReader(ctx, f.Spec)
	if err != nil {
		return fmt.Errorf("sinks.ReadPublished %s: %w", f.Spec, err)
	}
	if !ok {
		return nil
	}
	defer db.Close()
	rows, err := db.CurrentRows(ctx)
	if err != nil {
		return fmt.Errorf("sinks.ReadPublished %s: read current rows: %w", f.Spec, err)
	}
	for _, r := range rows {
		if r.State == model.Final {
			// The marker: key, revision and state.
			r = model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
		}
		emit(r)
	}
	return nil
}
