package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
)

func init() {
	register.DoFn5x2[
		context.Context, *sdfread.WatermarkEstimator, *sdf.LockRTracker, readerKey,
		func(beam.EventTime, model.Record), sdf.ProcessContinuation, error,
	](&readFn{})
	register.Emitter2[beam.EventTime, model.Record]()
}

// readFn reads the subscription: each element is a reader key (readerKey),
// with one restriction, never split.
type readFn struct {
	Project      string
	Subscription string  // projects/P/subscriptions/S
	Opts         Options // with defaults, ArchiveDir absolute

	sdfread.Shape[restriction, readerKey]
	client *gpubsub.Client
	stop   *sources.StopWatch
}

// Setup builds the client (PUBSUB_EMULATOR_HOST, when set, points it at an
// emulator without credentials).
func (f *readFn) Setup() error {
	c, err := gpubsub.NewClient(context.Background(), f.Project)
	if err != nil {
		return fmt.Errorf("pubsub source %s: client: %w", f.Subscription, err)
	}
	f.client = c
	f.stop = f.Opts.Stop.Watch(f.Opts.PollInterval)
	return nil
}

func (f *readFn) Teardown() {
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
}

func (f *readFn) CreateInitialRestriction(k readerKey) restriction {
	return newRestriction(k.Shard, time.Now().UnixMilli())
}

// RestrictionSize reports the key's pending records (restriction.size), so every
// residual's size follows the backlog.
func (f *readFn) RestrictionSize(_ readerKey, rest restriction) float64 { return rest.size() }

func (f *readFn) CreateTracker(rest restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(sdfread.NewCheckpointTracker("pubsub", rest, false))
}

func (f *readFn) ProcessElement(ctx context.Context, we *sdfread.WatermarkEstimator, rt *sdf.LockRTracker, key readerKey, emit func(beam.EventTime, model.Record)) (sdf.ProcessContinuation, error) {
	rest, done, pc, err := sdfread.Begin[restriction](rt, func() string { return fmt.Sprintf("pubsub source %s", key) }, f.stop.Stopped, f.Opts.PollInterval)
	if done {
		return pc, err
	}

	st, err := openStore(f.Opts.ArchiveDir, rest.Shard)
	if err != nil {
		return sdf.StopProcessing(), err
	}
	r := newReader(rest, f.Opts)
	r.subscription, r.store = f.Subscription, st
	stalledGauge := metrics.Gauge(metrics.PubsubStalled(st.part))
	r.stalled = func(ms int64) { stalledGauge.Set(ctx, ms) }
	r.sub = f.client.SubscriptionAdminClient
	r.log = slog.Default().With("source", "pubsub", "subscription", f.Subscription, "shard", rest.Shard)
	r.stop = f.stop.Stopped
	r.claim = func(next restriction) bool { return sdfread.Claim(rt, next) }
	r.emit = func(rec model.Record) { sdfread.Emit(emit, rec) }

	out, err := r.run(ctx)
	f.count(ctx, r)
	if err != nil {
		return sdf.StopProcessing(), err
	}
	if out == sdfread.Lost || out == sdfread.Stopped {
		return sdfread.Continue(out, f.Opts.PollInterval), nil
	}

	now := time.Now().UnixMilli()
	wentIdle := r.endCall(out, now)
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	return sdfread.End(ctx, we, out, f.Opts.PollInterval, Partition, wentIdle, r.rest.Reported, r.rest.Reported, now), nil
}

// Counters the launcher's progress line shows for a Pub/Sub source.
const (
	MetricHeldExtended   = string(metrics.PubsubHeldExtended)
	MetricArchiveRetries = string(metrics.PubsubArchiveRetries)
)

// count reports the call's source figures ("read" is counted downstream).
func (f *readFn) count(ctx context.Context, r *reader) {
	c := &r.c
	for name, v := range map[metrics.Name]*atomic.Int64{
		metrics.PubsubPulled:         &c.pulled,
		metrics.PubsubAcked:          &c.acked,
		metrics.PubsubAckErrors:      &c.ackErrors,
		metrics.PubsubBlank:          &c.blank,
		metrics.PubsubReplayed:       &c.replayed,
		metrics.PubsubObjects:        &c.objects,
		metrics.PubsubArchiveBytes:   &c.archiveBytes,
		metrics.PubsubArchiveRetries: &c.archiveRetries,
		metrics.PubsubHeldExtended:   &c.extended,
	} {
		if v := v.Load(); v != 0 {
			metrics.Counter(name).Inc(ctx, v)
		}
	}
	metrics.Gauge(metrics.PubsubHeldPeak).Set(ctx, c.heldPeak.Load())
}
