package sources

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	register.DoFn5x2[
		context.Context, *WatermarkEstimator, *sdf.LockRTracker, string,
		func(beam.EventTime, model.Record), sdf.ProcessContinuation, error,
	](&readFn{})
	register.Emitter2[beam.EventTime, model.Record]()
}

// readFn reads one partition per element (its name), with one restriction
// per partition. Its exported fields are its configuration.
type readFn struct {
	Dir string
	// Source keys this application on the process-wide watermark board.
	Source     string
	Partitions []string
	Follow     bool
	Policy     watermark.Policy
	Event      event.Config
	Poll       time.Duration
	MaxPerCall int
	Starts     []startPoint
	// StopGen is the RequestStop count when the pipeline was built.
	StopGen int64
}

// staleAfter is how long (ms) a board entry that is not refreshed still
// counts. A partition is refreshed at least every poll while it runs here;
// one that stops being refreshed is processed elsewhere (a remote runner's
// other worker), where its own estimator holds the runner's minimum.
func (f *readFn) staleAfter() int64 {
	return max(2*time.Minute, 20*f.Poll).Milliseconds()
}

func (f *readFn) Setup() {
	sharedBoard.register(f.Source, f.Partitions, time.Now().UnixMilli())
}

func (f *readFn) CreateInitialRestriction(partition string) restriction {
	rest := newRestriction(time.Now().UnixMilli())
	for _, st := range f.Starts {
		if st.Partition == partition {
			rest.File, rest.Offset, rest.Line = st.File, st.Offset, st.Line
			rest.Floor, rest.FloorFiles = st.File, -1
		}
	}
	return rest
}

// SplitRestriction keeps the partition whole: it is one ordered sequence.
func (f *readFn) SplitRestriction(_ string, rest restriction) []restriction {
	return []restriction{rest}
}

// RestrictionSize is a constant: every partition is one unit of work of
// unknown length.
func (f *readFn) RestrictionSize(_ string, rest restriction) float64 {
	if rest.Closed {
		return 0
	}
	return 1
}

func (f *readFn) CreateTracker(rest restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(NewCheckpointTracker("source", rest, !f.Follow))
}

func (f *readFn) InitialWatermarkEstimatorState(_ beam.EventTime, _ restriction, _ string) int64 {
	return model.NoWatermark
}

func (f *readFn) CreateWatermarkEstimator(state int64) *WatermarkEstimator {
	return NewWatermarkEstimator(state)
}

func (f *readFn) WatermarkEstimatorState(e *WatermarkEstimator) int64 {
	return e.Value()
}

func (f *readFn) ProcessElement(ctx context.Context, we *WatermarkEstimator, rt *sdf.LockRTracker, partition string, emit func(beam.EventTime, model.Record)) (sdf.ProcessContinuation, error) {
	rest, ok := rt.GetRestriction().(restriction)
	if !ok {
		return sdf.StopProcessing(), fmt.Errorf("source partition %q: restriction of type %T", partition, rt.GetRestriction())
	}
	if rest.Closed {
		sharedBoard.finish(f.Source, partition)
		return sdf.StopProcessing(), nil
	}
	if stopRequested(f.StopGen) {
		// Nothing is read and the watermark stays where it is; the
		// restriction is never finished (see RequestStop).
		return sdf.ResumeProcessingIn(f.Poll), nil
	}

	r := newReader(f.Dir, partition, rest, f.Follow, f.Policy, f.Event)
	r.maxRecords = f.MaxPerCall
	r.stop = func() bool { return stopRequested(f.StopGen) }
	r.claim = func(next restriction) bool { return rt.TryClaim(next) }
	r.emit = func(rec model.Record) {
		emit(beam.EventTime(ToMtime(rec.WatermarkBefore)), rec)
		if faults.Fire(faults.CrashAfterRead) {
			faults.Crash(faults.CrashAfterRead)
		}
	}
	out, err := r.run()
	if err != nil {
		return sdf.StopProcessing(), err
	}
	switch out {
	case outLost:
		return sdf.StopProcessing(), nil
	case outStopped:
		return sdf.ResumeProcessingIn(f.Poll), nil
	case outFinished:
		if !rt.TryClaim(r.rest) {
			return sdf.StopProcessing(), nil
		}
		sharedBoard.finish(f.Source, partition)
		return sdf.StopProcessing(), nil
	}

	now := time.Now().UnixMilli()
	wentIdle := r.watermarkState(now)
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	if wentIdle {
		metrics.Counter(metrics.IdleTransitions(partition)).Inc(ctx, 1)
	}
	own := r.rest.Reported
	sharedBoard.update(f.Source, partition, own, now)
	w := own
	if m, ok := sharedBoard.min(f.Source, now, f.staleAfter()); ok {
		w = min(w, m)
	}
	we.Advance(w)
	if own != model.NoWatermark {
		metrics.Gauge(metrics.WatermarkLag(partition)).Set(ctx, now-own)
	}
	if out == outCaughtUp {
		return sdf.ResumeProcessingIn(f.Poll), nil
	}
	return sdf.ResumeProcessingIn(0), nil
}
