package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	_ "github.com/revenue-stream/hourly/coders" // model.Record coder
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/watermark"
)

// Defaults of FolderOptions.
const (
	DefaultPollInterval = time.Second
	DefaultMaxPerCall   = 5000
)

// CallSizeFor is the records a reader call emits by default for a job with
// shards dedup shards: about 24 records a dedup batch (a call is a bundle,
// split into a batch per shard, each costing about six State API round
// trips), at most 50,000, since a replay's memory grows with the call.
func CallSizeFor(shards int) int {
	return min(max(DefaultMaxPerCall, 24*shards), 50_000)
}

// callBudget bounds one ProcessElement call: the runner sees the watermark
// only between calls.
const callBudget = 200 * time.Millisecond

// readAheadPause is how long a reader waits before asking again for room
// under the read-ahead bound.
const readAheadPause = 10 * time.Millisecond

// FolderOptions configure ReadFolder.
type FolderOptions struct {
	// Follow keeps watching for new files until stopped (--follow); false
	// replays what is there, then ends.
	Follow bool
	// Watermark is --ooo-bound and --idle-timeout; Event the validation
	// configuration (its MaxLine is --max-line).
	Watermark watermark.Policy
	Event     event.Config
	// PollInterval is how often a follower looks for new data (default 1s).
	PollInterval time.Duration
	// MaxPerCall is how many records a reader call emits at most (default
	// DefaultMaxPerCall; the launcher uses CallSizeFor).
	MaxPerCall int
	// Settle is --settle; DiscoverEvery is --discover-every.
	Settle, DiscoverEvery time.Duration
	// Resume holds a restart's checkpoints, at most one per partition: the
	// partition resumes after it with its watermark restored. May be nil.
	Resume []model.Checkpoint
	// Stop is the run's graceful-stop request (see StopSignal); zero: none.
	Stop StopSignal
	// ReadAhead names the job's read-ahead account (flow.ReadAhead),
	// ReadAheadRecords (--read-ahead) bounds it ("" or 0: no bound), and
	// ReadAheadLead is its horizon in event time (flow.ReadAhead.Horizon).
	ReadAhead        string
	ReadAheadRecords int
	ReadAheadLead    time.Duration
	// Unlisted builds the same transforms without looking at the folder
	// (launch --dry-run): no partition is known at construction, and the
	// folder need not exist.
	Unlisted bool
}

func (o FolderOptions) withDefaults() FolderOptions {
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	o.MaxPerCall = cmp.Or(o.MaxPerCall, DefaultMaxPerCall)
	o.Settle = cmp.Or(o.Settle, DefaultSettle)
	o.DiscoverEvery = cmp.Or(o.DiscoverEvery, DefaultDiscoverEvery)
	return o
}

// Validate checks a source folder and the options before any work starts.
// Every error is one line naming the flag or setting at fault.
func Validate(dir string, o FolderOptions) error {
	_, _, err := prepare(dir, o)
	return err
}

// Check validates the settings alone, looking at no folder, so that a
// launcher can refuse a bad value before any work (a demo log).
func (o FolderOptions) Check() error {
	return cmp.Or(
		o.Watermark.Validate(),
		o.Event.Validate(),
		cli.ErrIf(o.PollInterval < 0, "source poll interval must not be negative, got %v", o.PollInterval),
		cli.ErrIf(o.MaxPerCall < 0, "source records per call must not be negative, got %d", o.MaxPerCall),
		cli.ErrIf(o.Settle < 0, "--settle must not be negative, got %v", o.Settle),
		cli.ErrIf(o.DiscoverEvery < 0, "--discover-every must not be negative, got %v", o.DiscoverEvery),
		cli.ErrIf(o.ReadAheadRecords < 0, "--read-ahead must not be negative, got %d", o.ReadAheadRecords),
	)
}

// prepare validates and returns the partitions and parsed start positions.
func prepare(dir string, o FolderOptions) ([]string, []model.Checkpoint, error) {
	if dir == "" {
		return nil, nil, errors.New("--source: empty folder path")
	}
	if !o.Unlisted {
		if err := files.CheckDir(context.Background(), dir); err != nil {
			return nil, nil, fmt.Errorf("--source=%s: %w", dir, err)
		}
	}
	if err := o.Check(); err != nil {
		return nil, nil, err
	}
	var parts []string
	if !o.Unlisted {
		var err error
		if parts, err = rawlog.ReadablePartitions(dir); err != nil {
			return nil, nil, fmt.Errorf("--source=%s: %w", dir, err)
		}
	}
	starts, err := parseStarts(o.Resume, parts)
	return parts, starts, err
}

func parseStarts(resume []model.Checkpoint, parts []string) ([]model.Checkpoint, error) {
	var out []model.Checkpoint
	seen := map[string]string{}
	for _, c := range resume {
		key := path.Join(c.Partition, c.File) // "." + f is f: the root partition
		partition, file := rawlog.RootPartition, key
		if i := strings.IndexByte(key, '/'); i >= 0 {
			partition, file = key[:i], key[i+1:]
		}
		switch m := (rawlog.Mark{Offset: c.Offset, Line: c.Line}); {
		case file == "" || strings.Contains(file, "/") || rawlog.Ignored(file):
			return nil, fmt.Errorf("source start position %q: want <partition>/<file> or <file>", key)
		case !slices.Contains(parts, partition):
			return nil, fmt.Errorf("source start position %q: no partition %q in the folder", key, partition)
		case m.Offset < 0 || m.Line < 0 || (m.Offset == 0) != (m.Line == 0):
			return nil, fmt.Errorf("source start position %q: invalid mark %+v", key, m)
		case seen[partition] == key:
			return nil, fmt.Errorf("source resume checkpoint %q given twice", key)
		case seen[partition] != "":
			return nil, fmt.Errorf("source start positions %q and %q name the same partition", seen[partition], key)
		}
		seen[partition] = key
		out = append(out, model.Checkpoint{Partition: partition, File: file, Offset: c.Offset, Line: c.Line, MaxValid: c.MaxValid})
	}
	slices.SortFunc(out, func(a, b model.Checkpoint) int { return strings.Compare(a.Partition, b.Partition) })
	return out, nil
}

func init() {
	register.DoFn2x0[[]byte, func(string)](&partitionsFn{})
	register.DoFn2x1[[]byte, func(int, string), error](&listPartitionsFn{})
	register.DoFn5x1[context.Context, state.Provider, int, string, func(string), error](&newPartitionsFn{})
	register.Emitter1[model.Checkpoint]()
	register.Emitter1[string]()
	register.Emitter2[int, string]()
}

// ReadFolder reads the raw-log folder dir and returns its records
// (model.Record), each timestamped with its partition's watermark before it,
// and a model.Checkpoint each time a partition has read a file completely
// (for sink.WriteProgress and FolderOptions.Resume). A bad option panics, as
// a construction error does in Beam Go: call Validate first.
func ReadFolder(s beam.Scope, dir string, o FolderOptions) (records, checkpoints beam.PCollection) {
	s = s.Scope("sources.ReadFolder")
	o = o.withDefaults()
	parts, starts, err := prepare(dir, o)
	if err != nil {
		panic(fmt.Sprintf("sources.ReadFolder: %v", err))
	}
	partitions := beam.ParDo(s, &partitionsFn{Partitions: parts}, beam.Impulse(s))
	if o.Follow {
		partitions = beam.Flatten(s, partitions, discoverPartitions(s, dir, parts, o.DiscoverEvery))
	}
	return beam.ParDo2(s, &readFn{
		Dir:        dir,
		Source:     flow.Token(16), // two pipelines in one process never mix watermark boards
		Partitions: parts,
		Starts:     starts,
		Opts:       o,
	}, partitions)
}

// partitionsFn emits the partitions listed at construction, one element each.
type partitionsFn struct{ Partitions []string }

func (f *partitionsFn) ProcessElement(_ []byte, emit func(string)) {
	for _, p := range f.Partitions {
		emit(p)
	}
}

// DefaultDiscoverEvery is the default --discover-every.
const DefaultDiscoverEvery = 10 * time.Second

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
