package sources

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"

	_ "github.com/revenue-stream/hourly/coders" // model.Record coder
)

// Defaults of FolderOptions.
const (
	DefaultPollInterval = time.Second
	DefaultMaxPerCall   = 5000
)

// CallSizeFor is the records a reader call emits by default for a job with
// shards dedup shards. A call is a bundle, and the dedup step takes in one
// batch per shard and partition a bundle touches, so the batches hold the
// call's records over the shard count, and each costs about six State API
// round trips whatever it holds: the call grows with the shards to keep
// about 24 records a batch, from DefaultMaxPerCall (up to 208 shards;
// prism's default is 8) to 50,000 (half the default read-ahead; 2,048
// shards: 49,152). It does not grow further: the read-ahead bound lets
// through a call per partition and per call read past it, so a replay's
// memory grows with the call (a 12-day replay at 8 shards: 202 MiB peak
// with 5,000 a call, 390 MiB with 25,000).
func CallSizeFor(shards int) int {
	return min(max(DefaultMaxPerCall, 24*shards), 50_000)
}

// callBudget bounds the processing time of one ProcessElement call, for the
// same reason as MaxPerCall: the runner sees the watermark only between calls.
const callBudget = 200 * time.Millisecond

// readAheadPause is how long a reader waits before it asks again for room
// under the read-ahead bound (FolderOptions.ReadAhead): a short pause, since
// the dedup step takes in a few thousand records in that time.
const readAheadPause = 10 * time.Millisecond

// FolderOptions configure ReadFolder.
type FolderOptions struct {
	// Follow keeps watching for new files (streaming) until stopped; false
	// replays what is there, then ends.
	Follow bool
	// Watermark is the per-partition watermark policy (--ooo-bound,
	// --idle-timeout).
	Watermark watermark.Policy
	// Event is the validation configuration: the source must know which
	// event times are valid, since only those advance a partition watermark.
	// Its MaxLine is --max-line.
	Event event.Config
	// PollInterval is how often a follower looks for new data (default 1s).
	PollInterval time.Duration
	// MaxPerCall is how many records a reader emits before returning to the
	// runner so that it sees the watermark (default CallSizeFor the
	// job's dedup shards).
	MaxPerCall int
	// Settle is how long a followed file that ends in a line without a
	// newline must stay unchanged before that line is read (--settle,
	// default DefaultSettle). A replay reads such a line at once.
	Settle time.Duration
	// DiscoverEvery is how often a follower looks for partition folders
	// created after the start (--discover-every, default
	// DefaultDiscoverEvery). A replay reads the partitions there at the start.
	DiscoverEvery time.Duration
	// Resume holds checkpoints to resume after, at most one per partition
	// (a restart's; see model.Checkpoint): the partition resumes after the
	// checkpoint's complete lines of its file, files sorting before it count
	// as read, and the partition's watermark is restored from the
	// checkpoint's largest valid event time, so every record after it gets
	// the WatermarkBefore it got in the first run. May be nil.
	Resume []model.Checkpoint
	// Stop is the run's graceful-stop request, which the readers look for
	// once per PollInterval (see StopSignal). The zero value: none.
	Stop StopSignal
	// ReadAhead names the job's read-ahead account on the embedded runner
	// (flow.ReadAhead), and ReadAheadRecords (--read-ahead) bounds
	// it: a reader call waits while the records read but not yet taken in
	// by the dedup step leave no room for another call. "" or 0: no bound
	// (a runner with its own flow control).
	ReadAhead        string
	ReadAheadRecords int
	// Unlisted builds the read without looking at the folder: no partition
	// is known at construction (followed ones are still discovered) and
	// the folder need not exist. The transforms, and what they ask of the
	// runner, are those of a listed folder: launch --dry-run builds so for
	// a bucket or a demo log not yet generated, contacting no service.
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

// prepare validates and returns the partitions and parsed start positions.
func prepare(dir string, o FolderOptions) ([]string, []startPoint, error) {
	if dir == "" {
		return nil, nil, errors.New("--source: empty folder path")
	}
	if !o.Unlisted {
		if err := files.CheckDir(context.Background(), dir); err != nil {
			return nil, nil, fmt.Errorf("--source=%s: %w", dir, err)
		}
	}
	if err := o.Watermark.Validate(); err != nil {
		return nil, nil, err
	}
	if err := o.Event.Validate(); err != nil {
		return nil, nil, err
	}
	if o.PollInterval < 0 {
		return nil, nil, fmt.Errorf("source poll interval must not be negative, got %v", o.PollInterval)
	}
	if o.MaxPerCall < 0 {
		return nil, nil, fmt.Errorf("source records per call must not be negative, got %d", o.MaxPerCall)
	}
	if o.Settle < 0 {
		return nil, nil, fmt.Errorf("--settle must not be negative, got %v", o.Settle)
	}
	if o.DiscoverEvery < 0 {
		return nil, nil, fmt.Errorf("--discover-every must not be negative, got %v", o.DiscoverEvery)
	}
	if o.ReadAheadRecords < 0 {
		return nil, nil, fmt.Errorf("--read-ahead must not be negative, got %d", o.ReadAheadRecords)
	}
	var parts []string
	if !o.Unlisted {
		var err error
		if parts, err = rawlog.ListPartitions(dir); err != nil {
			return nil, nil, fmt.Errorf("--source=%s: %w", dir, err)
		}
	}
	if o.Follow && len(parts) == 0 && !o.Unlisted {
		// Later partitions are discovered, but the watermark needs a first
		// one: with none, it would follow the discovery's processing time
		// and the first data would all be too late.
		return nil, nil, fmt.Errorf("--source=%s: folder has no partitions yet; create a partition subfolder (or a first file) before starting --follow", dir)
	}
	start := map[string]rawlog.Mark{}
	maxValid := map[string]int64{}
	for _, c := range o.Resume {
		key := path.Join(c.Partition, c.File) // "." + f is f: the root partition
		if _, dup := start[key]; dup {
			return nil, nil, fmt.Errorf("source resume checkpoint %q given twice", key)
		}
		start[key] = rawlog.Mark{Offset: c.Offset, Line: c.Line}
		maxValid[c.Partition] = c.MaxValid
	}
	starts, err := parseStarts(start, parts)
	if err != nil {
		return nil, nil, err
	}
	for i := range starts {
		starts[i].MaxValid = model.NoWatermark
		if m, ok := maxValid[starts[i].Partition]; ok {
			starts[i].MaxValid = m
		}
	}
	return parts, starts, nil
}

// startPoint is a parsed FolderOptions.Resume entry. DoFn fields are
// serialised as JSON; a slice of plain structs keeps that obvious.
type startPoint struct {
	Partition string
	File      string
	Offset    int64
	Line      int
	// MaxValid restores the partition's watermark (model.NoWatermark: none).
	MaxValid int64
}

func parseStarts(start map[string]rawlog.Mark, parts []string) ([]startPoint, error) {
	var out []startPoint
	seen := map[string]string{}
	for key, m := range start {
		partition, file := rawlog.RootPartition, key
		if i := strings.IndexByte(key, '/'); i >= 0 {
			partition, file = key[:i], key[i+1:]
		}
		switch {
		case file == "" || strings.Contains(file, "/") || rawlog.Ignored(file):
			return nil, fmt.Errorf("source start position %q: want <partition>/<file> or <file>", key)
		case !slices.Contains(parts, partition):
			return nil, fmt.Errorf("source start position %q: no partition %q in the folder", key, partition)
		case m.Offset < 0 || m.Line < 0 || (m.Offset == 0) != (m.Line == 0):
			return nil, fmt.Errorf("source start position %q: invalid mark %+v", key, m)
		}
		if other, dup := seen[partition]; dup {
			return nil, fmt.Errorf("source start positions %q and %q name the same partition", other, key)
		}
		seen[partition] = key
		out = append(out, startPoint{Partition: partition, File: file, Offset: m.Offset, Line: m.Line})
	}
	slices.SortFunc(out, func(a, b startPoint) int { return strings.Compare(a.Partition, b.Partition) })
	return out, nil
}

func init() {
	register.DoFn2x0[[]byte, func(string)](&partitionsFn{})
	register.Emitter1[model.Checkpoint]()
	register.Emitter1[string]()
}

// ReadFolder reads the raw-log folder dir and returns its records
// (model.Record), each timestamped with its partition's watermark before it,
// and its progress: a model.Checkpoint each time a partition has read a file
// completely, for a sink to store (sinks.WriteProgress) and a restart to
// resume from (FolderOptions.Resume). See the package doc for the reading
// rules. Options are checked as by Validate; call Validate first for a
// clean error, since a bad option here panics, as a construction error does
// in Beam Go.
func ReadFolder(s beam.Scope, dir string, o FolderOptions) (records, checkpoints beam.PCollection) {
	s = s.Scope("sources.ReadFolder")
	o = o.withDefaults()
	parts, starts, err := prepare(dir, o)
	if err != nil {
		panic(fmt.Sprintf("sources.ReadFolder: %v", err))
	}
	imp := beam.Impulse(s)
	partitions := beam.ParDo(s, &partitionsFn{Partitions: parts}, imp)
	if o.Follow {
		partitions = beam.Flatten(s, partitions, discoverPartitions(s, dir, parts, o.DiscoverEvery))
	}
	return beam.ParDo2(s, &readFn{
		Dir:        dir,
		Source:     newSourceID(),
		Partitions: parts,
		Follow:     o.Follow,
		Policy:     o.Watermark,
		Event:      o.Event,
		Poll:       o.PollInterval,
		MaxPerCall: o.MaxPerCall,
		Settle:     o.Settle,
		Starts:     starts,
		Stop:       o.Stop,
		ReadAhead:  o.ReadAhead,
		Budget:     o.ReadAheadRecords,
	}, partitions)
}

// partitionsFn emits the partitions listed at construction, one element each.
type partitionsFn struct {
	Partitions []string
}

func (f *partitionsFn) ProcessElement(_ []byte, emit func(string)) {
	for _, p := range f.Partitions {
		emit(p)
	}
}

// newSourceID names one ReadFolder application, so that the watermark board
// of two pipelines in one process (tests) never mixes.
func newSourceID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a clock is unique
		// enough for a process-local key.
		return fmt.Sprintf("t%d", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}
