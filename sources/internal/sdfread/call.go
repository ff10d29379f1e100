// Package sdfread holds what the folder and Pub/Sub reading SDFs share: the
// tracker (CheckpointTracker) and restriction coding, the estimator and
// shared DoFn methods (WatermarkEstimator, Shape), a call's start and end
// (Begin, Ended, Report, End), why it ended (Outcome, Continue), and the emit
// of a stamped record (Emit).
package sdfread

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// Outcome says why a reader's call ended.
type Outcome int

const (
	Budget   Outcome = iota // records or time used up: resume at once
	CaughtUp                // nothing more for now
	Finished                // a replay read the whole partition
	Stopped                 // a graceful stop was seen
	Lost                    // a claim failed: the runner checkpointed
	Retry                   // the input could not be reached
)

func (o Outcome) String() string {
	return [...]string{"budget", "caught-up", "finished", "stopped", "lost", "retry"}[o]
}

// Continue is what the runner hears after a call that ended with out.
func Continue(out Outcome, poll time.Duration) sdf.ProcessContinuation {
	switch out {
	case Finished, Lost:
		return sdf.StopProcessing()
	case CaughtUp, Stopped:
		return sdf.ResumeProcessingIn(poll)
	case Retry:
		return sdf.ResumeProcessingIn(max(poll, time.Second))
	}
	return sdf.ResumeProcessingIn(0)
}

// Begin is the start of both readers' calls: the restriction to read, or (done) how the call ends
// instead: a restriction of another type fails it, a closed one stops it, and while held (a
// graceful stop) it reads nothing and resumes after poll, never finishing (sources.StopSignal).
// what names the reader in the error, and is called only then.
func Begin[R Checkpointable[R]](rt *sdf.LockRTracker, what func() string, held func() bool, poll time.Duration) (rest R, done bool, pc sdf.ProcessContinuation, err error) {
	rest, ok := rt.GetRestriction().(R)
	switch {
	case !ok:
		return rest, true, sdf.StopProcessing(), fmt.Errorf("%s: restriction of type %T", what(), rt.GetRestriction())
	case rest.IsClosed():
		return rest, true, sdf.StopProcessing(), nil
	case held():
		return rest, true, sdf.ResumeProcessingIn(poll), nil
	}
	return rest, false, nil, nil
}

// End is the end of both readers' calls that read, once the restriction
// with its watermark state is claimed: it reports the partition's idle
// transition, hands the runner the watermark w, and sets the lag of own, the
// reader's own watermark, at now.
func End(ctx context.Context, we *WatermarkEstimator, out Outcome, poll time.Duration, partition string, wentIdle bool, own, w, now int64) sdf.ProcessContinuation {
	if wentIdle {
		metrics.Counter(metrics.IdleTransitions(partition)).Inc(ctx, 1)
	}
	we.Advance(w)
	if own != model.NoWatermark {
		metrics.Gauge(metrics.WatermarkLag(partition)).Set(ctx, now-own)
	}
	return Continue(out, poll)
}

// Emit outputs a stamped record at its WatermarkBefore, never its event
// time: the runner sees it late exactly when rule (a) does.
func Emit(emit func(beam.EventTime, model.Record), rec model.Record) {
	emit(beam.EventTime(ToMtime(rec.WatermarkBefore)), rec)
}

// Shape gives a reading DoFn over restrictions R and elements E, by
// embedding, the SDF methods both readers share: a restriction's size and
// split (none), and a WatermarkEstimator that starts with no watermark and whose state is its
// value.
type Shape[R Checkpointable[R], E any] struct{}

// RestrictionSize is one unit of work of unknown length, none once closed.
// The Pub/Sub source overrides it with its backlog (pubsub/restriction.go).
func (Shape[R, E]) RestrictionSize(_ E, rest R) float64 {
	if rest.IsClosed() {
		return 0
	}
	return 1
}

// SplitRestriction keeps a restriction whole: it is one ordered sequence.
func (Shape[R, E]) SplitRestriction(_ E, rest R) []R { return []R{rest} }

func (Shape[R, E]) InitialWatermarkEstimatorState(_ beam.EventTime, _ R, _ E) int64 {
	return model.NoWatermark
}

func (Shape[R, E]) CreateWatermarkEstimator(state int64) *WatermarkEstimator {
	return NewWatermarkEstimator(state)
}

func (Shape[R, E]) WatermarkEstimatorState(e *WatermarkEstimator) int64 { return e.Value() }

// Ended says whether a call must end before its next record, and why: a
// stop, or its records or time used up (the runner sees the watermark only
// between calls).
func Ended(stop bool, emitted, maxRecords int, elapsed, budget time.Duration) (Outcome, bool) {
	switch {
	case stop:
		return Stopped, true
	case emitted >= maxRecords || elapsed >= budget:
		return Budget, true
	}
	return 0, false
}

// Report takes p's watermark report at processing time now (others: the
// lowest watermark of the other active partitions, if any) and logs what it
// says changed about the reader's idleness; subject names the reader
// ("source partition", "pubsub source"). It returns the state for the
// restriction.
func Report(log *slog.Logger, subject string, p *watermark.Partition, now, others int64, anyOthers bool, idleTimeout time.Duration) (watermark.State, watermark.Report) {
	rep := p.Report(now, others, anyOthers)
	s := p.State()
	switch {
	case rep.WentIdle:
		log.Info(subject+" idle: it leaves the watermark minimum",
			"idle_timeout", idleTimeout, "last_record", watermark.FormatMs(s.LastActive),
			"reported_watermark", watermark.FormatMs(s.Reported))
	case rep.CameBack:
		log.Info(subject+" active again: its old records are late or too late",
			"event_watermark", watermark.FormatMs(p.Watermark()), "reported_watermark", watermark.FormatMs(s.Reported))
	}
	return s, rep
}

// WatermarkEstimator holds the watermark a reader last handed to the runner
// (epoch ms, or model.NoWatermark): a manual estimator whose state is its
// value, as in Beam's natsio. It never decreases.
type WatermarkEstimator struct {
	state atomic.Int64 // read from a split request's goroutine too
}

func NewWatermarkEstimator(state int64) *WatermarkEstimator {
	e := &WatermarkEstimator{}
	e.state.Store(state)
	return e
}

// CurrentWatermark is the watermark for the runner.
func (e *WatermarkEstimator) CurrentWatermark() time.Time {
	return ToMtime(e.state.Load()).ToTime()
}

// Advance raises the watermark to ms if that is later.
func (e *WatermarkEstimator) Advance(ms int64) {
	for {
		cur := e.state.Load()
		if ms <= cur || e.state.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// Value is the estimator state (epoch ms or model.NoWatermark).
func (e *WatermarkEstimator) Value() int64 { return e.state.Load() }

// ToMtime clamps epoch milliseconds (or model.NoWatermark) to Beam's
// timestamp range.
func ToMtime(ms int64) mtime.Time {
	switch {
	case ms == model.NoWatermark || ms < int64(mtime.MinTimestamp):
		return mtime.MinTimestamp
	case ms > int64(mtime.MaxTimestamp):
		return mtime.MaxTimestamp
	}
	return mtime.Time(ms)
}
