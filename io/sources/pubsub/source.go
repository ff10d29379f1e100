package pubsub

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/io/sources"
	"github.com/revenue-stream/hourly/watermark"

	_ "github.com/revenue-stream/hourly/coders" // model.Record coder
)

// Defaults of Options.
const (
	DefaultMaxPerCall   = 20000
	DefaultPullBatch    = 1000
	DefaultPullTimeout  = 2 * time.Second
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultPullers is how many pull streams one reader key runs, each
	// pulling, archiving and acknowledging on its own.
	DefaultPullers = 8
	// DefaultAckExtension is the ack deadline set, every
	// DefaultAckExtendEvery, on messages still held (being archived).
	DefaultAckExtension   = 60 * time.Second
	DefaultAckExtendEvery = 3 * time.Second
	// DefaultArchiveFailAfter is how long the archive may fail before the
	// job fails (--pubsub-archive-fail-after).
	DefaultArchiveFailAfter = 2 * time.Minute
	// DefaultBacklogAge: a message published longer than this before its
	// pull came from a backlog (see backlog.go).
	DefaultBacklogAge = time.Minute
	// DefaultArchiveRoot is where the archive of subscription S goes unless
	// Options.ArchiveDir says otherwise: ./pubsub-log/S.
	DefaultArchiveRoot = "pubsub-log"
)

// callBudget bounds the processing time of one ProcessElement call: the
// runner sees the watermark, and can checkpoint, only between calls. Each
// call starts and drains its pull streams, so a shorter budget costs
// throughput.
const callBudget = time.Second

// Options configure Read.
type Options struct {
	// ArchiveDir is where every pulled payload is written, as an immutable
	// object, before its message is acknowledged: a folder on any
	// filesystem Beam's io/filesystem serves (local disk on prism,
	// gs://bucket/path in production). Its subfolder "pubsub" (and
	// "pubsub-NN" for reader key NN) is a raw-log partition. Default
	// ./pubsub-log/<subscription id>. It is the source of truth: the
	// records reach the pipeline from it, and a restart re-emits it.
	ArchiveDir string
	// Watermark is the partition policy: --ooo-bound and --idle-timeout
	// (see the package doc for choosing them for Pub/Sub).
	Watermark watermark.Policy
	// Event is the validation configuration: only valid event times advance
	// the watermark. Its MaxLine is --max-line.
	Event event.Config
	// MaxPerCall is how many records one call emits before returning to the
	// runner, so that it sees the watermark (default 5000).
	MaxPerCall int
	// PullBatch is the most messages one Pull asks for (default 1000): one
	// archive object at most.
	PullBatch int
	// Pullers is the number of pull streams per reader key (default 8: enough in flight to hide
	// the archive write's latency behind the other pulls).
	Pullers int
	// Shards is the number of reader keys (default 1): elements of the
	// reading step that pull from the same subscription in parallel, on as
	// many workers as the runner spreads them over, each with its own
	// archive partition and watermark.
	Shards int
	// MaxHeld bounds the messages pulled and not yet acknowledged per
	// reader key (default Pullers × PullBatch).
	MaxHeld int
	// AckExtension is the deadline set on held messages every
	// AckExtendEvery (defaults 60s, 3s).
	AckExtension, AckExtendEvery time.Duration
	// ArchiveFailAfter: an archive that cannot be written for this long
	// fails the job (default 2m).
	ArchiveFailAfter time.Duration
	// BacklogAge: a message published longer than this before its pull
	// holds the watermark (default 1m; negative turns the hold off).
	BacklogAge time.Duration
	// StallAfter: a reader key that holds messages (pulled, or in the
	// archive to re-emit) and has emitted none for this long logs one line
	// naming the key and what it waits on (the archive write, the
	// acknowledgement, the emit into the steps after it), and sets its
	// gauge pubsub_stalled_ms_<partition> (default 1m).
	StallAfter time.Duration
	// PullTimeout bounds one Pull that waits for messages (default 2s).
	PullTimeout time.Duration
	// PollInterval is how long the reader rests after a pull found nothing,
	// and while stopped (default 200ms).
	PollInterval time.Duration
	// Stop is the run's graceful-stop request, which the readers look for
	// once per PollInterval (see sources.StopSignal). The zero value: none.
	Stop sources.StopSignal
	// SkipReplay starts at the end of the archive instead of re-emitting
	// it. The re-emit is what recovers messages acknowledged by a run that
	// died before the runner committed them, so skip it only for an archive
	// that a previous run finished cleanly, or a fresh one.
	SkipReplay bool
	// ReplayFrom limits the first re-emit to archive objects of this pull
	// hour and later (zero: the whole archive). It must reach back over the
	// dedup retention and every window still open.
	ReplayFrom time.Time
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
	// Project ids are lowercase letters, digits and hyphens; a project
	// number is digits; "domain.com:project" is the legacy domain form.
	projectRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.:-]{0,99}$`)
	// Subscription ids: 3-255 characters, a letter first, then letters,
	// digits and - _ . ~ + % (Pub/Sub's resource-name rules).
	subscriptionRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$`)
)

// ParseSource parses a --source of the form
// "pubsub:projects/P/subscriptions/S" (the "pubsub:" prefix is optional) and
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

// Validate checks a subscription and the options before any work starts,
// each error one line naming the flag or setting at fault.
func Validate(subscription string, o Options) error {
	_, _, err := prepare(subscription, o)
	return err
}

func prepare(subscription string, o Options) (project, id string, err error) {
	project, id, err = ParseSource(subscription)
	if err != nil {
		return "", "", err
	}
	o = o.withDefaults(id)
	switch {
	case !files.IsLocal(o.ArchiveDir) && !strings.HasPrefix(o.ArchiveDir, "gs://") && !strings.HasPrefix(o.ArchiveDir, "s3://") && !strings.HasPrefix(o.ArchiveDir, "memfs://"):
		return "", "", fmt.Errorf("pubsub archive %s: want a local folder, gs://BUCKET/PATH, s3://BUCKET/PATH or memfs://PATH", o.ArchiveDir)
	case o.Pullers < 0 || o.Shards < 0 || o.MaxHeld < 0:
		return "", "", errors.New("pubsub pullers, reader keys and held messages must not be negative")
	case o.MaxHeld < o.PullBatch:
		return "", "", fmt.Errorf("pubsub held messages (%d) must be at least one pull batch (%d)", o.MaxHeld, o.PullBatch)
	case o.AckExtension < 10*time.Second || o.AckExtension > 600*time.Second:
		return "", "", fmt.Errorf("pubsub ack extension %s: Pub/Sub accepts 10s to 600s", o.AckExtension)
	case o.AckExtendEvery <= 0 || o.AckExtendEvery >= o.AckExtension:
		return "", "", fmt.Errorf("pubsub ack extension period %s must be positive and below the extension %s", o.AckExtendEvery, o.AckExtension)
	case o.ArchiveFailAfter < 0:
		return "", "", fmt.Errorf("--pubsub-archive-fail-after must not be negative, got %s", o.ArchiveFailAfter)
	case o.StallAfter < 0:
		return "", "", fmt.Errorf("--pubsub-stall-after must not be negative, got %s", o.StallAfter)
	case o.MaxPerCall < 0:
		return "", "", fmt.Errorf("pubsub records per call must not be negative, got %d", o.MaxPerCall)
	case o.PullBatch < 0:
		return "", "", fmt.Errorf("pubsub pull batch must not be negative, got %d", o.PullBatch)
	case o.PullTimeout < 0 || o.PollInterval < 0:
		return "", "", errors.New("pubsub pull timeout and poll interval must not be negative")
	}
	if err := o.Watermark.Validate(); err != nil {
		return "", "", err
	}
	if err := o.Event.Validate(); err != nil {
		return "", "", err
	}
	return project, id, nil
}

// Read reads the Pub/Sub subscription ("projects/P/subscriptions/S", with or
// without the "pubsub:" prefix) as an unbounded PCollection of model.Record,
// each timestamped with the source's watermark before it. Every record is in
// an archive object, durably, before its message is acknowledged, and records
// are emitted from the archive position the restriction holds; see the
// package doc. Options are checked as by Validate; call Validate first for a
// clean error, since a bad option here panics, as a construction error does
// in Beam Go.
func Read(s beam.Scope, subscription string, o Options) beam.PCollection {
	s = s.Scope("pubsub.Read")
	project, id, err := prepare(subscription, o)
	if err != nil {
		panic(fmt.Sprintf("pubsub.Read: %v", err))
	}
	o = o.withDefaults(id)
	// The launcher's working directory decides a relative archive path, not
	// whatever directory a worker process happens to run in.
	dir := o.ArchiveDir
	if files.IsLocal(dir) {
		if dir, err = filepath.Abs(dir); err != nil {
			panic(fmt.Sprintf("pubsub.Read: archive %s: %v", o.ArchiveDir, err))
		}
	}
	name := "projects/" + project + "/subscriptions/" + id
	keys := readerKeys(s, name, o.Shards)
	return beam.ParDo(s, &readFn{
		Project:          project,
		Subscription:     name,
		ArchiveDir:       dir,
		Policy:           o.Watermark,
		Event:            o.Event,
		MaxPerCall:       o.MaxPerCall,
		PullBatch:        o.PullBatch,
		Pullers:          o.Pullers,
		MaxHeld:          o.MaxHeld,
		AckExtension:     o.AckExtension,
		AckExtendEvery:   o.AckExtendEvery,
		ArchiveFailAfter: o.ArchiveFailAfter,
		BacklogAge:       o.BacklogAge,
		StallAfter:       o.StallAfter,
		PullTimeout:      o.PullTimeout,
		Poll:             o.PollInterval,
		SkipReplay:       o.SkipReplay,
		ReplayFrom:       o.ReplayFrom,
		Stop:             o.Stop,
	}, keys)
}
