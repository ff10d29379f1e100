package pubsub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders" // also model.Record's coder
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/watermark"
)

// Defaults of Options.
const (
	DefaultMaxPerCall       = 20000
	DefaultPullBatch        = 1000
	DefaultPullTimeout      = 2 * time.Second
	DefaultPollInterval     = 200 * time.Millisecond
	DefaultPullers          = 8
	DefaultAckExtension     = 60 * time.Second
	DefaultAckExtendEvery   = 3 * time.Second
	DefaultArchiveFailAfter = 2 * time.Minute
	DefaultBacklogAge       = time.Minute
	// DefaultArchiveRoot holds subscription S's archive: ./pubsub-log/S.
	DefaultArchiveRoot = "pubsub-log"
)

// callBudget bounds one ProcessElement call: the runner sees the watermark
// only between calls, and each call starts and drains its pull streams.
const callBudget = time.Second

// Options configure Read.
type Options struct {
	// ArchiveDir is where every pulled payload is written before its message
	// is acknowledged: a raw-log folder (partition "pubsub", "pubsub-NN" for
	// reader key NN). Default ./pubsub-log/<subscription id>.
	ArchiveDir string
	// Watermark is --ooo-bound and --idle-timeout; Event the validation
	// configuration (its MaxLine is --max-line).
	Watermark watermark.Policy
	Event     event.Config
	// MaxPerCall is how many records one call emits at most; PullBatch the
	// most messages one Pull asks for (one archive object); Pullers the pull
	// streams per key, enough to hide the archive write's latency; Shards
	// the reader keys (default 1), each with its own partition and watermark.
	MaxPerCall, PullBatch, Pullers, Shards int
	// MaxHeld bounds the messages pulled and not yet acknowledged per key
	// (default Pullers × PullBatch).
	MaxHeld int
	// AckExtension is the deadline set on held messages every AckExtendEvery.
	AckExtension, AckExtendEvery time.Duration
	// ArchiveFailAfter: an archive unwritable this long fails the job.
	ArchiveFailAfter time.Duration
	// BacklogAge: a message published longer than this before its pull
	// holds the watermark (negative: never).
	BacklogAge time.Duration
	// StallAfter: a key holding messages and emitting none this long logs
	// what it waits on and sets its gauge pubsub_stalled_ms_<partition>.
	StallAfter time.Duration
	// PullTimeout bounds one Pull that waits for messages.
	PullTimeout time.Duration
	// PollInterval is the rest after an empty pull, and while stopped.
	PollInterval time.Duration
	// Stop is the run's graceful-stop request (see sources.StopSignal).
	Stop sources.StopSignal
}

func (o Options) withDefaults(subscriptionID string) Options {
	o.ArchiveDir = cmp.Or(o.ArchiveDir, filepath.Join(DefaultArchiveRoot, subscriptionID))
	o.MaxPerCall = cmp.Or(o.MaxPerCall, DefaultMaxPerCall)
	o.PullBatch = cmp.Or(o.PullBatch, DefaultPullBatch)
	o.PullTimeout = cmp.Or(o.PullTimeout, DefaultPullTimeout)
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	o.Pullers = cmp.Or(o.Pullers, DefaultPullers)
	o.Shards = cmp.Or(o.Shards, 1)
	o.MaxHeld = cmp.Or(o.MaxHeld, o.Pullers*o.PullBatch)
	o.AckExtension = cmp.Or(o.AckExtension, DefaultAckExtension)
	o.AckExtendEvery = cmp.Or(o.AckExtendEvery, DefaultAckExtendEvery)
	o.ArchiveFailAfter = cmp.Or(o.ArchiveFailAfter, DefaultArchiveFailAfter)
	o.BacklogAge = cmp.Or(o.BacklogAge, DefaultBacklogAge)
	o.StallAfter = cmp.Or(o.StallAfter, DefaultStallAfter)
	return o
}

var (
	// A project id, number, or legacy "domain.com:project".
	projectRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.:-]{0,99}$`)
	// Pub/Sub's resource-name rules for subscription ids.
	subscriptionRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$`)
)

// ParseSource parses a --source "[pubsub:]projects/P/subscriptions/S" and
// returns P and S. Every error is one line naming the flag.
func ParseSource(s string) (project, subscription string, err error) {
	rest := strings.TrimPrefix(s, "pubsub:")
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != "subscriptions" {
		return "", "", fmt.Errorf("--source=%s: want pubsub:projects/PROJECT/subscriptions/SUBSCRIPTION", s)
	}
	project, subscription = parts[1], parts[3]
	switch {
	case !projectRe.MatchString(project):
		return "", "", fmt.Errorf("--source=%s: %q is not a valid project id", s, project)
	case !subscriptionRe.MatchString(subscription) || strings.HasPrefix(strings.ToLower(subscription), "goog"):
		return "", "", fmt.Errorf("--source=%s: %q is not a valid subscription id (3-255 of A-Z a-z 0-9 - _ . ~ + %%, a letter first, not \"goog...\")", s, subscription)
	}
	return project, subscription, nil
}

// Validate checks a subscription and the options before any work starts.
func Validate(subscription string, o Options) error {
	_, id, err := ParseSource(subscription)
	if err != nil {
		return err
	}
	o = o.withDefaults(id)
	archiveErr := files.CheckName(o.ArchiveDir)
	return cmp.Or(
		cli.ErrIf(archiveErr != nil, "--pubsub-archive=%s: %v", o.ArchiveDir, archiveErr),
		cli.ErrIf(o.Pullers < 0 || o.Shards < 0 || o.MaxHeld < 0, "pubsub pullers, reader keys and held messages must not be negative"),
		cli.ErrIf(o.MaxHeld < o.PullBatch, "pubsub held messages (%d) must be at least one pull batch (%d)", o.MaxHeld, o.PullBatch),
		cli.ErrIf(o.AckExtension < 10*time.Second || o.AckExtension > 600*time.Second, "pubsub ack extension %s: Pub/Sub accepts 10s to 600s", o.AckExtension),
		cli.ErrIf(o.AckExtendEvery <= 0 || o.AckExtendEvery >= o.AckExtension,
			"pubsub ack extension period %s must be positive and below the extension %s", o.AckExtendEvery, o.AckExtension),
		cli.ErrIf(o.ArchiveFailAfter < 0, "--pubsub-archive-fail-after must not be negative, got %s", o.ArchiveFailAfter),
		cli.ErrIf(o.StallAfter < 0, "--pubsub-stall-after must not be negative, got %s", o.StallAfter),
		cli.ErrIf(o.MaxPerCall < 0, "pubsub records per call must not be negative, got %d", o.MaxPerCall),
		cli.ErrIf(o.PullBatch < 0, "pubsub pull batch must not be negative, got %d", o.PullBatch),
		cli.ErrIf(o.PullTimeout < 0 || o.PollInterval < 0, "pubsub pull timeout and poll interval must not be negative"),
		o.Watermark.Validate(),
		o.Event.Validate(),
	)
}

// Read reads the Pub/Sub subscription ("[pubsub:]projects/P/subscriptions/S")
// as an unbounded PCollection of model.Record, each timestamped with the
// source's watermark before it, emitted from the archive (see the package
// doc). A bad option panics, as a construction error does in Beam Go: call
// Validate first.
func Read(s beam.Scope, subscription string, o Options) beam.PCollection {
	s = s.Scope("pubsub.Read")
	if err := Validate(subscription, o); err != nil {
		panic(fmt.Sprintf("pubsub.Read: %v", err))
	}
	project, id, _ := ParseSource(subscription)
	o = o.withDefaults(id)
	// The launcher's working directory decides a relative archive path.
	if files.IsLocal(o.ArchiveDir) {
		dir, err := filepath.Abs(o.ArchiveDir)
		if err != nil {
			panic(fmt.Sprintf("pubsub.Read: archive %s: %v", o.ArchiveDir, err))
		}
		o.ArchiveDir = dir
	}
	name := "projects/" + project + "/subscriptions/" + id
	return beam.ParDo(s, &readFn{Project: project, Subscription: name, Opts: o}, readerKeys(s, name, o.Shards, o.ArchiveDir))
}

func init() {
	coders.Register(encodeReaderKey, decodeReaderKey)
	register.DoFn3x1[context.Context, []byte, func(readerKey), error](&keysFn{})
	register.Emitter1[readerKey]()
}

// readerKey is one reader key: an element of its own, since a runner places
// an SDF's work by its element.
type readerKey struct {
	Subscription string // projects/P/subscriptions/S
	Shard        int
}

func (k readerKey) String() string { return fmt.Sprintf("%s#%d", k.Subscription, k.Shard) }

// keysFn expands the Impulse into one element per reader key: Shards of
// them, or more when the archive holds the partition of a higher key (a run
// with more --pubsub-shards). Only a key re-emits its partition, which holds
// what that run acknowledged and perhaps never emitted, and a fresh start
// rebuilds dedup state and the windows from every partition.
type keysFn struct {
	Subscription string
	Shards       int
	ArchiveDir   string // "": the keys are Shards'
}

func (f *keysFn) ProcessElement(ctx context.Context, _ []byte, emit func(readerKey)) error {
	n := max(f.Shards, 1)
	archived, err := archiveKeys(ctx, f.ArchiveDir)
	if err != nil {
		return fmt.Errorf("pubsub source %s: reader keys of the archive: %w", f.Subscription, err)
	}
	if archived > n {
		slog.Warn("pubsub source: the archive holds the partitions of more reader keys than --pubsub-shards; reading with all of them, so that none of their archived messages is left out",
			"subscription", f.Subscription, "archive", f.ArchiveDir, "shards", n, "reader_keys", archived)
		n = archived
	}
	for shard := range n {
		emit(readerKey{Subscription: f.Subscription, Shard: shard})
	}
	return nil
}

// archiveKeys is one more than the highest reader key whose partition
// (PartitionOf) the archive root holds; 0 when it holds none.
func archiveKeys(ctx context.Context, root string) (int, error) {
	if root == "" {
		return 0, nil
	}
	l, err := files.List(ctx, root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range l.Dirs {
		if d == Partition {
			n = max(n, 1)
		} else if k, err := strconv.Atoi(strings.TrimPrefix(d, Partition+"-")); err == nil && k > 0 && PartitionOf(k) == d {
			n = max(n, k+1)
		}
	}
	return n, nil
}

// readerKeys is one element per reader key, reshuffled so a runner that
// fused them with the Impulse spreads them over its workers.
func readerKeys(s beam.Scope, subscription string, shards int, archiveDir string) beam.PCollection {
	keys := beam.ParDo(s, &keysFn{Subscription: subscription, Shards: shards, ArchiveDir: archiveDir}, beam.Impulse(s))
	return beam.Reshuffle(s, keys)
}

// The key's coder is deterministic: the runner hashes its bytes.
func encodeReaderKey(k readerKey) []byte {
	w := coders.Writer{B: make([]byte, 0, len(k.Subscription)+8)}
	w.String(k.Subscription)
	w.Varint(int64(k.Shard))
	return w.B
}

func decodeReaderKey(b []byte) (readerKey, error) {
	rd := coders.Reader{B: b}
	k := readerKey{Subscription: rd.String(), Shard: int(rd.Varint())}
	return coders.Done(k, &rd, "pubsub reader key")
}
