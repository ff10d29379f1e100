package sources

import (
	"context"
	"fmt"
	"slices"
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
	register.DoFn6x2[
		context.Context, *WatermarkEstimator, *sdf.LockRTracker, string,
		func(beam.EventTime, model.Record), func(beam.EventTime, model.Checkpoint), sdf.ProcessContinuation, error,
	](&readFn{})
	register.Emitter2[beam.EventTime, model.Checkpoint]()
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
	Settle     time.Duration
	Starts     []startPoint
	// Stop is the run's graceful-stop request (see StopSignal).
	Stop StopSignal

	open *openFiles
	stop *StopWatch
}

// staleAfter is how long (ms) a board entry that is not refreshed still
// counts. A partition is refreshed at least every poll while it runs here;
// one that stops being refreshed is processed elsewhere (a remote runner's
// other worker), where its own estimator holds the runner's minimum.
func (f *readFn) staleAfter() int64 {
	return max(2*time.Minute, 20*f.Poll).Milliseconds()
}

func (f *readFn) Teardown() { f.open.closeAll() }

func (f *readFn) Setup() {
	f.open = newOpenFiles()
	f.stop = f.Stop.Watch(f.Poll)
	sharedBoard.register(f.Source, f.Partitions, time.Now().UnixMilli())
}

func (f *readFn) CreateInitialRestriction(partition string) restriction {
	rest := newRestriction(time.Now().UnixMilli())
	for _, st := range f.Starts {
		if st.Partition == partition {
			rest.File, rest.Offset, rest.Line = st.File, st.Offset, st.Line
			rest.Floor, rest.FloorFiles = st.File, -1
			rest.MaxValid = st.MaxValid
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

func (f *readFn) ProcessElement(ctx context.Context, we *WatermarkEstimator, rt *sdf.LockRTracker, partition string,
	emit func(beam.EventTime, model.Record), progress func(beam.EventTime, model.Checkpoint)) (sdf.ProcessContinuation, error) {
	rest, ok := rt.GetRestriction().(restriction)
	if !ok {
		return sdf.StopProcessing(), fmt.Errorf("source partition %q: restriction of type %T", partition, rt.GetRestriction())
	}
	if rest.Closed {
		sharedBoard.finish(f.Source, partition)
		return sdf.StopProcessing(), nil
	}
	stopping := f.stop.Stopped()
	if stopping && !f.Follow {
		// Nothing is read and the watermark stays where it is; the
		// restriction is never finished (see StopSignal).
		return sdf.ResumeProcessingIn(f.Poll), nil
	}

	r := newReader(f.Dir, partition, rest, f.Follow, f.Policy, f.Event)
	r.maxRecords = f.MaxPerCall
	r.settle, r.source = f.Settle, f.Source
	r.open = f.open
	r.stop = f.stop.Stopped
	if stopping {
		// A follower's last pass: the current file to its end, its
		// unterminated last line included (SPEC §3), and no other file.
		// The watermark stays where it is.
		r.final, r.stop = true, func() bool { return false }
	}
	r.claim = func(next restriction) bool { return rt.TryClaim(next) }
	r.emit = func(rec model.Record) {
		emit(beam.EventTime(ToMtime(rec.WatermarkBefore)), rec)
		if faults.Fire(faults.CrashAfterRead) {
			faults.Crash(faults.CrashAfterRead)
		}
	}
	r.checkpoint = func(c model.Checkpoint) {
		// Stamped like the partition's next record: its watermark there.
		progress(beam.EventTime(ToMtime(r.stamper.Watermark())), c)
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
	}
	if stopping {
		return sdf.ResumeProcessingIn(f.Poll), nil
	}
	switch out {
	case outFinished:
		if !rt.TryClaim(r.rest) {
			return sdf.StopProcessing(), nil
		}
		sharedBoard.finish(f.Source, partition)
		return sdf.StopProcessing(), nil
	}

	now := time.Now().UnixMilli()
	r.others = func() (int64, bool) { return sharedBoard.active(f.Source, partition, now, f.staleAfter()) }
	wentIdle := r.watermarkState(now)
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	if wentIdle {
		metrics.Counter(metrics.IdleTransitions(partition)).Inc(ctx, 1)
	}
	own := r.rest.Reported
	if r.rest.MaxValid == model.NoWatermark && !slices.Contains(f.Partitions, partition) {
		// A partition discovered while the job runs has no watermark of its
		// own until it has data: it follows the others meanwhile rather
		// than claim the minimum it was never part of. Its records are
		// then judged against its own watermark (rule (a)) and the
		// pipeline's (rule (b)), as a returning partition's are.
		if m, ok := sharedBoard.min(f.Source, now, f.staleAfter()); ok {
			own = max(own, m)
		}
	}
	sharedBoard.update(f.Source, partition, own, now, r.rest.Idle)
	w := own
	if m, ok := sharedBoard.min(f.Source, now, f.staleAfter()); ok {
		w = min(w, m)
	}
	we.Advance(w)
	if own != model.NoWatermark {
		metrics.Gauge(metrics.WatermarkLag(partition)).Set(ctx, now-own)
	}
	// 1 while the partition is idle (out of the watermark minimum), for the
	// live views (app/live), which read it from the job's metrics.
	idle := int64(0)
	if r.rest.Idle {
		idle = 1
	}
	metrics.Gauge(metrics.PartitionIdle(partition)).Set(ctx, idle)
	if out == outCaughtUp {
		return sdf.ResumeProcessingIn(f.Poll), nil
	}
	return sdf.ResumeProcessingIn(0), nil
}
