package sdfread

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/revenue-stream/hourly/model"
)

// Outcome says why a reader's call ended.
type Outcome int

const (
	// Budget: the records per call or the time budget are used up; more
	// data may be waiting, so the runner should resume at once.
	Budget Outcome = iota
	// CaughtUp: everything there is for now was read (a follower at the end
	// of its files, a subscription that had nothing for a whole pull).
	CaughtUp
	// Finished: a replay read the whole partition; the restriction is
	// closed.
	Finished
	// Stopped: a graceful stop was seen.
	Stopped
	// Lost: a claim failed, because the runner checkpointed the restriction
	// from another goroutine; the residual has the rest.
	Lost
	// Retry: the input could not be reached; resume after a pause.
	Retry
)

func (o Outcome) String() string {
	return [...]string{"budget", "caught-up", "finished", "stopped", "lost", "retry"}[o]
}

// Continue is what the runner hears after a call that ended with out and
// claimed its final state: resume at once while data may wait, after poll
// when caught up or stopped, after max(poll, 1s) to retry, never once
// finished or lost.
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

// Emit outputs a stamped record. Its timestamp is the watermark before it
// (never its event time): the runner sees it as late exactly when rule (a)
// of the too-late gate does, and it holds the downstream watermark until the
// record is counted (see transforms/dedup.go).
func Emit(emit func(beam.EventTime, model.Record), rec model.Record) {
	emit(beam.EventTime(ToMtime(rec.WatermarkBefore)), rec)
}

// Shape gives a reading DoFn over restrictions R and elements E, by
// embedding, the SDF methods both readers share: a restriction's size, and
// a WatermarkEstimator that starts with no watermark and whose state is its
// value.
type Shape[R Checkpointable[R], E any] struct{}

// RestrictionSize is one unit of work of unknown length, none once closed.
// The Pub/Sub source overrides it with its backlog (pubsub/size.go).
func (Shape[R, E]) RestrictionSize(_ E, rest R) float64 {
	if rest.IsClosed() {
		return 0
	}
	return 1
}

func (Shape[R, E]) InitialWatermarkEstimatorState(_ beam.EventTime, _ R, _ E) int64 {
	return model.NoWatermark
}

func (Shape[R, E]) CreateWatermarkEstimator(state int64) *WatermarkEstimator {
	return NewWatermarkEstimator(state)
}

func (Shape[R, E]) WatermarkEstimatorState(e *WatermarkEstimator) int64 { return e.Value() }

// Ended says whether a call must end before its next record, and why: a
// stop was requested, or the records (emitted of maxRecords) or the time
// (elapsed of budget) of the call are used up, since the runner sees the
// watermark, and can checkpoint, only between calls.
func Ended(stop bool, emitted, maxRecords int, elapsed, budget time.Duration) (Outcome, bool) {
	switch {
	case stop:
		return Stopped, true
	case emitted >= maxRecords || elapsed >= budget:
		return Budget, true
	}
	return 0, false
}
