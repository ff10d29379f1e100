package sinktest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// ConcurrentBatch is batch i of writer w: rows for keys no other writer uses,
// one revision-increasing row for a key both writers share, audit rows and
// progress.
func ConcurrentBatch(t testing.TB, w, i int) sink.Batch {
	const rowsPerBatch = 5
	b := sink.Batch{Progress: []model.Checkpoint{{Partition: fmt.Sprintf("w%d", w), File: fmt.Sprintf("%06d", i), Line: i}}}
	base := MS("2026-01-01T00:00:00Z")
	for k := range rowsPerBatch {
		ws := base + int64(i*rowsPerBatch+k)*Hour
		b.Rows = append(b.Rows, model.Row{WindowStart: ws, WindowEnd: ws + Hour, Dims: fmt.Sprintf(`{"w":"%d"}`, w),
			RevenueMicros: int64(k), EventCount: 1, Revision: 1, State: model.OnTime})
	}
	b.Rows = append(b.Rows, model.Row{WindowStart: base, WindowEnd: base + Hour, Dims: `{"shared":true}`,
		RevenueMicros: int64(i), EventCount: int64(i), Revision: int64(i*2 + w + 1), State: model.Late})
	b.TooLate = []model.TooLate{{Position: fmt.Sprintf("w%d/f.jsonl:%d", w, i), EventID: "x", EventTime: base}}
	b.Quarantined = []model.Quarantined{{Position: fmt.Sprintf("w%d/q.jsonl:%d", w, i), Reason: model.ReasonBadAmount}}
	return b
}

// WriteConcurrently runs writers goroutines, each writing batches
// ConcurrentBatch batches through its own handle from open.
func WriteConcurrently(t *testing.T, writers, batches int, open func(w int) sink.Sink) {
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := open(w)
		wg.Go(func() {
			for i := range batches {
				if _, err := s.Write(context.Background(), ConcurrentBatch(t, w, i)); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
