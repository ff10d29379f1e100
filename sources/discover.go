package sources

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// DefaultDiscoverEvery is the default --discover-every.
const DefaultDiscoverEvery = 10 * time.Second

func init() {
	register.DoFn2x1[[]byte, func(int, string), error](&listPartitionsFn{})
	register.DoFn5x1[context.Context, state.Provider, int, string, func(string), error](&newPartitionsFn{})
	register.Emitter2[int, string]()
}

// discoverPartitions lists the folder every interval and emits each
// partition not in known once (issue #12): a stateful step remembers what was
// emitted, so a partition gets one reader across retries and restarts.
func discoverPartitions(s beam.Scope, dir string, known []string, every time.Duration) beam.PCollection {
	s = s.Scope("DiscoverPartitions")
	listed := beam.ParDo(s, &listPartitionsFn{Dir: dir, Known: known}, clock.Ticks(s, every))
	return beam.ParDo(s, &newPartitionsFn{Seen: state.MakeValueState[[]string]("seen")}, listed)
}

// listPartitionsFn emits, at each tick, the partitions not known at
// construction, all under one key.
type listPartitionsFn struct {
	Dir   string
	Known []string
}

func (f *listPartitionsFn) ProcessElement(_ []byte, emit func(int, string)) error {
	parts, err := rawlog.ListPartitions(f.Dir)
	if err != nil { // most often transient
		slog.Error("source folder listing failed; looking for new partitions again at the next tick", "error", err)
		return nil
	}
	for _, p := range parts {
		if !slices.Contains(f.Known, p) {
			emit(0, p)
		}
	}
	return nil
}

// newPartitionsFn emits each partition the first time it is listed.
type newPartitionsFn struct{ Seen state.Value[[]string] }

func (f *newPartitionsFn) ProcessElement(ctx context.Context, sp state.Provider, _ int, partition string, emit func(string)) error {
	seen, _, err := f.Seen.Read(sp)
	if err != nil {
		return fmt.Errorf("discover partitions: read state: %w", err)
	}
	if slices.Contains(seen, partition) {
		return nil
	}
	if err := f.Seen.Write(sp, append(seen, partition)); err != nil {
		return fmt.Errorf("discover partitions: write state: %w", err)
	}
	metrics.Counter(metrics.PartitionsDiscovered).Inc(ctx, 1)
	slog.Info("source partition discovered; reading it from its first file", "partition", partition)
	emit(partition)
	return nil
}
