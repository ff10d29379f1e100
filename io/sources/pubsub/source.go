package pubsub

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/watermark"

	_ "github.com/revenue-stream/hourly/coders" // model.Record coder
)

// Defaults of Options.
const (
	DefaultMaxPerCall   = 5000
	DefaultPullBatch    = 1000
	DefaultPullTimeout  = 2 * time.Second
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultArchiveRoot is where the archive of subscription S goes unless
	// Options.ArchiveDir says otherwise: ./pubsub-log/S.
	DefaultArchiveRoot = "pubsub-log"
)

// callBudget bounds the processing time of one ProcessElement call: the
// runner sees the watermark, and can checkpoint, only between calls.
const callBudget = 500 * time.Millisecond

// Options configure Read.
type Options struct {
	// ArchiveDir is the raw-log folder the payloads are appended to before
	// they are acknowledged (its subfolder "pubsub" is the one partition).
	// Default ./pubsub-log/<subscription id>. It must be on durable storage
	// that the next run of the job sees: it is the recovery log.
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
	// PullBatch is the most messages one Pull asks for (default 1000).
	PullBatch int
	// PullTimeout bounds one Pull that waits for messages (default 2s).
	PullTimeout time.Duration
	// PollInterval is how long the reader rests after a pull found nothing,
	// and while stopped (default 200ms).
	PollInterval time.Duration
	// SkipReplay starts pulling at once instead of first replaying the
	// archive. The replay is what recovers messages acknowledged by a run
	// that died before the runner committed them, so skip it only for an
	// archive that a previous run finished cleanly, or a fresh one.
	SkipReplay bool
	// ReplayFrom limits the replay to archive files of this arrival hour and
	// later (zero: the whole archive). It must reach back over the dedup
	// retention and every window still open, or copies and late data of the
	// skipped hours are judged without them.
	ReplayFrom time.Time
	// MaxFileLines rotates an archive file after this many lines even within
	// its hour (default DefaultMaxFileLines).
	MaxFileLines int
}

func (o Options) withDefaults(subscriptionID string) Options {
	if o.ArchiveDir == "" {
		o.ArchiveDir = filepath.Join(DefaultArchiveRoot, subscriptionID)
	}
	if o.MaxPerCall == 0 {
		o.MaxPerCall = DefaultMaxPerCall
	}
	if o.PullBatch == 0 {
		o.PullBatch = DefaultPullBatch
	}
	if o.PullTimeout == 0 {
		o.PullTimeout = DefaultPullTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxFileLines == 0 {
		o.MaxFileLines = DefaultMaxFileLines
	}
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
	case strings.Contains(o.ArchiveDir, "://"):
		return "", "", fmt.Errorf("pubsub archive %s: only a local (or mounted) folder can hold the archive: it is appended to and fsynced", o.ArchiveDir)
	case o.MaxPerCall < 0:
		return "", "", fmt.Errorf("pubsub records per call must not be negative, got %d", o.MaxPerCall)
	case o.PullBatch < 0:
		return "", "", fmt.Errorf("pubsub pull batch must not be negative, got %d", o.PullBatch)
	case o.PullTimeout < 0 || o.PollInterval < 0:
		return "", "", errors.New("pubsub pull timeout and poll interval must not be negative")
	case o.MaxFileLines < 0:
		return "", "", fmt.Errorf("pubsub archive lines per file must not be negative, got %d", o.MaxFileLines)
	}
	if err := o.Watermark.Validate(); err != nil {
		return "", "", err
	}
	if err := o.Event.Validate(); err != nil {
		return "", "", err
	}
	return project, id, nil
}

func init() {
	register.DoFn2x0[[]byte, func(string)](&subscriptionFn{})
	register.Emitter1[string]()
}

// Read reads the Pub/Sub subscription ("projects/P/subscriptions/S", with or
// without the "pubsub:" prefix) as an unbounded PCollection of model.Record,
// each timestamped with the source's watermark before it. Every record is in
// the archive folder, fsynced, before its message is acknowledged; see the
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
	dir, err := filepath.Abs(o.ArchiveDir)
	if err != nil {
		panic(fmt.Sprintf("pubsub.Read: archive %s: %v", o.ArchiveDir, err))
	}
	name := "projects/" + project + "/subscriptions/" + id
	imp := beam.Impulse(s)
	subs := beam.ParDo(s, &subscriptionFn{Subscription: name}, imp)
	return beam.ParDo(s, &readFn{
		Project:      project,
		Subscription: name,
		ArchiveDir:   dir,
		Policy:       o.Watermark,
		Event:        o.Event,
		MaxPerCall:   o.MaxPerCall,
		PullBatch:    o.PullBatch,
		PullTimeout:  o.PullTimeout,
		Poll:         o.PollInterval,
		Replay:       !o.SkipReplay,
		ReplayFrom:   o.ReplayFrom,
		MaxFileLines: o.MaxFileLines,
		StopGen:      stopGen.Load(),
	}, subs)
}

// subscriptionFn emits the one element the reader's restriction hangs on.
type subscriptionFn struct {
	Subscription string
}

func (f *subscriptionFn) ProcessElement(_ []byte, emit func(string)) { emit(f.Subscription) }
