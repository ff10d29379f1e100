package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/sources"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// namespace is the metrics namespace shared by the whole pipeline.
const namespace = "revenue"

func init() {
	register.DoFn5x2[
		context.Context, *sources.WatermarkEstimator, *sdf.LockRTracker, string,
		func(beam.EventTime, model.Record), sdf.ProcessContinuation, error,
	](&readFn{})
	register.Emitter2[beam.EventTime, model.Record]()
}

// testHooks are set by this package's tests only: the DoFn runs in the test
// process under prism's loopback harness, so a crash between reading and
// committing can be staged at an exact point.
var testHooks struct {
	sync.Mutex
	afterAck func([]model.Record) error
}

// readFn reads the subscription (its one element) with one restriction that
// is never split. Its exported fields are its configuration.
type readFn struct {
	Project      string
	Subscription string
	ArchiveDir   string
	Policy       watermark.Policy
	Event        event.Config
	MaxPerCall   int
	PullBatch    int
	PullTimeout  time.Duration
	Poll         time.Duration
	Replay       bool
	ReplayFrom   time.Time
	MaxFileLines int
	// StopGen is the RequestStop count when the pipeline was built.
	StopGen int64

	client  *gpubsub.Client
	archive *fileArchive
}

// Setup builds the client (PUBSUB_EMULATOR_HOST, when set, points it at an
// emulator without credentials) and opens this process's archive writer.
func (f *readFn) Setup() error {
	c, err := gpubsub.NewClient(context.Background(), f.Project)
	if err != nil {
		return fmt.Errorf("pubsub source %s: client: %w", f.Subscription, err)
	}
	f.client = c
	f.archive = openArchive(f.ArchiveDir, f.MaxFileLines)
	return nil
}

func (f *readFn) Teardown() error {
	var err error
	if f.archive != nil {
		err = closeArchive(f.archive)
		f.archive = nil
	}
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
	return err
}

func (f *readFn) CreateInitialRestriction(_ string) restriction {
	return newRestriction(time.Now().UnixMilli(), f.Replay)
}

// SplitRestriction keeps the restriction whole: one reader, one arrival
// order, one watermark.
func (f *readFn) SplitRestriction(_ string, rest restriction) []restriction {
	return []restriction{rest}
}

func (f *readFn) RestrictionSize(_ string, rest restriction) float64 {
	if rest.Closed {
		return 0
	}
	return 1
}

func (f *readFn) CreateTracker(rest restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(sources.NewCheckpointTracker("pubsub", rest, false))
}

func (f *readFn) InitialWatermarkEstimatorState(_ beam.EventTime, _ restriction, _ string) int64 {
	return model.NoWatermark
}

func (f *readFn) CreateWatermarkEstimator(state int64) *sources.WatermarkEstimator {
	return sources.NewWatermarkEstimator(state)
}

func (f *readFn) WatermarkEstimatorState(e *sources.WatermarkEstimator) int64 { return e.Value() }

func (f *readFn) ProcessElement(ctx context.Context, we *sources.WatermarkEstimator, rt *sdf.LockRTracker, subscription string, emit func(beam.EventTime, model.Record)) (sdf.ProcessContinuation, error) {
	rest, ok := rt.GetRestriction().(restriction)
	if !ok {
		return sdf.StopProcessing(), fmt.Errorf("pubsub source %s: restriction of type %T", subscription, rt.GetRestriction())
	}
	if rest.Closed {
		return sdf.StopProcessing(), nil
	}
	if stopRequested(f.StopGen) {
		// Nothing is pulled and the watermark stays; the restriction is
		// never finished (see RequestStop).
		return sdf.ResumeProcessingIn(f.Poll), nil
	}

	r := newReader(rest, f.Policy, f.Event)
	r.subscription, r.archiveDir, r.replayFrom = f.Subscription, f.ArchiveDir, f.ReplayFrom
	r.maxRecords, r.pullBatch, r.pullTimeout = f.MaxPerCall, f.PullBatch, f.PullTimeout
	r.sub, r.archive = f.client.SubscriptionAdminClient, f.archive
	r.log = slog.Default().With("source", "pubsub", "subscription", f.Subscription)
	r.stop = func() bool { return stopRequested(f.StopGen) }
	r.claim = func(next restriction) bool { return rt.TryClaim(next) }
	r.emit = func(rec model.Record) {
		// The timestamp is the watermark before the record (never its event
		// time): the runner sees it as late exactly when rule (a) of the
		// too-late gate does, and it holds the downstream watermark until
		// the record is counted (see transforms/dedup.go).
		emit(beam.EventTime(sources.ToMtime(rec.WatermarkBefore)), rec)
	}
	r.afterAck = func(recs []model.Record) error {
		// Looked up per batch, not per call: a test installs the hook while
		// a call may already be pulling.
		testHooks.Lock()
		hook := testHooks.afterAck
		testHooks.Unlock()
		if hook == nil {
			return nil
		}
		return hook(recs)
	}

	out, err := r.run(ctx)
	f.count(ctx, r)
	if err != nil {
		return sdf.StopProcessing(), err
	}
	switch out {
	case outLost:
		return sdf.StopProcessing(), nil
	case outStopped:
		return sdf.ResumeProcessingIn(f.Poll), nil
	}

	now := time.Now().UnixMilli()
	if r.watermarkState(now) {
		beam.NewCounter(namespace, "idle_transitions_"+Partition).Inc(ctx, 1)
	}
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	we.Advance(r.rest.Reported)
	if r.rest.Reported != model.NoWatermark {
		beam.NewGauge(namespace, "watermark_lag_ms_"+Partition).Set(ctx, now-r.rest.Reported)
	}
	switch out {
	case outCaughtUp:
		return sdf.ResumeProcessingIn(f.Poll), nil
	case outRetry:
		return sdf.ResumeProcessingIn(max(f.Poll, time.Second)), nil
	}
	return sdf.ResumeProcessingIn(0), nil
}

// count reports the call's source figures. "read" itself is counted by
// Validate, for every source alike.
func (f *readFn) count(ctx context.Context, r *reader) {
	for name, v := range map[string]int{
		"pubsub_pulled":         r.pulled,
		"pubsub_acked":          r.acked,
		"pubsub_ack_errors":     r.ackErrors,
		"pubsub_archive_errors": r.archiveErrors,
		"pubsub_blank":          r.blank,
		"pubsub_replayed":       r.replayed,
	} {
		if v != 0 {
			beam.NewCounter(namespace, name).Inc(ctx, int64(v))
		}
	}
}
