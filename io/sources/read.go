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
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/io/internal/sdfread"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	register.DoFn6x2[
		context.Context, *sdfread.WatermarkEstimator, *sdf.LockRTracker, string,
		func(beam.EventTime, model.Record), func(beam.EventTime, model.Checkpoint), sdf.ProcessContinuation, error,
	](&readFn{})
	register.Emitter2[beam.EventTime, model.Checkpoint]()
	register.Emitter2[beam.EventTime, model.Record]()
}

var _ sdf.BoundableRTracker = (*sdfread.CheckpointTracker[restriction])(nil)

// boards is each source's view of its partitions' reported watermarks, so
// that each reader reports min(own, board): prism keeps one output
// watermark per stage, the minimum over the last bundle's residuals only
// (see internal/localrunner). On a distributed runner a board sees only the
// partitions of its worker, and only ever lowers an estimate to the minimum
// the runner computes anyway.
var boards = localrunner.NewShared(watermark.NewBoard)

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
	// ReadAhead and Budget: see FolderOptions.ReadAhead.
	ReadAhead string
	Budget    int

	sdfread.Shape[restriction]
	open      *openFiles
	stop      *StopWatch
	readAhead *flow.ReadAhead
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
	f.readAhead = flow.ReadAheadOf(f.ReadAhead)
	now := time.Now().UnixMilli()
	boards.With(f.Source, func(b *watermark.Board) { b.Register(f.Partitions, now) })
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

func (f *readFn) CreateTracker(rest restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(sdfread.NewCheckpointTracker("source", rest, !f.Follow))
}

func (f *readFn) ProcessElement(ctx context.Context, we *sdfread.WatermarkEstimator, rt *sdf.LockRTracker, partition string,
	emit func(beam.EventTime, model.Record), progress func(beam.EventTime, model.Checkpoint)) (sdf.ProcessContinuation, error) {
	rest, ok := rt.GetRestriction().(restriction)
	if !ok {
		return sdf.StopProcessing(), fmt.Errorf("source partition %q: restriction of type %T", partition, rt.GetRestriction())
	}
	if rest.Closed {
		f.finish(partition)
		return sdf.StopProcessing(), nil
	}
	stopping := f.stop.Stopped()
	if stopping && !f.Follow {
		// Nothing is read and the watermark stays where it is; the
		// restriction is never finished (see StopSignal).
		return sdf.ResumeProcessingIn(f.Poll), nil
	}
	holds := true
	boards.With(f.Source, func(b *watermark.Board) { holds = b.Holds(partition, time.Now().UnixMilli(), f.staleAfter()) })
	if !f.readAhead.Room(f.Budget, f.MaxPerCall, holds) {
		// The dedup step is behind (prism has no backpressure): read
		// later. Nothing is read, the watermark stays where it is.
		return sdf.ResumeProcessingIn(readAheadPause), nil
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
	// The call's valid records join the read-ahead account as it ends:
	// they are the events the dedup step will take in (a rejected record
	// leaves for quarantine before it). Counted here, not where the events
	// reach the dedup step's input, so that no call asks for room while
	// another's records are on their way uncounted.
	queued := 0
	defer func() { f.readAhead.Queued(queued) }()
	r.emit = func(rec model.Record) {
		if rec.Valid != nil {
			queued++
		}
		sdfread.Emit(emit, rec)
		if faults.Fire(faults.CrashAfterRead) {
			faults.Crash(faults.CrashAfterRead)
		}
	}
	r.checkpoint = func(c model.Checkpoint) {
		// Stamped like the partition's next record: its watermark there.
		progress(beam.EventTime(sdfread.ToMtime(r.stamper.Watermark())), c)
	}
	out, err := r.run()
	if err != nil {
		return sdf.StopProcessing(), err
	}
	switch {
	case out == sdfread.Lost || out == sdfread.Stopped:
		return sdfread.Continue(out, f.Poll), nil
	case stopping:
		return sdfread.Continue(sdfread.Stopped, f.Poll), nil
	case out == sdfread.Finished:
		if rt.TryClaim(r.rest) {
			f.finish(partition)
		}
		return sdfread.Continue(out, f.Poll), nil
	}

	now := time.Now().UnixMilli()
	var wentIdle bool
	boards.With(f.Source, func(b *watermark.Board) {
		r.others = func() (int64, bool) { return b.Active(partition, now, f.staleAfter()) }
		wentIdle = r.watermarkState(now)
	})
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	if wentIdle {
		metrics.Counter(metrics.IdleTransitions(partition)).Inc(ctx, 1)
	}
	own, w := r.rest.Reported, int64(0)
	boards.With(f.Source, func(b *watermark.Board) {
		if r.rest.MaxValid == model.NoWatermark && !slices.Contains(f.Partitions, partition) {
			// A partition discovered while the job runs has no watermark of
			// its own until it has data: it follows the others meanwhile
			// rather than claim the minimum it was never part of. Its
			// records are then judged against its own watermark (rule (a))
			// and the pipeline's (rule (b)), as a returning partition's are.
			if m, ok := b.Min(now, f.staleAfter()); ok {
				own = max(own, m)
			}
		}
		b.Update(partition, own, now, r.rest.Idle)
		w = own
		if m, ok := b.Min(now, f.staleAfter()); ok {
			w = min(w, m)
		}
	})
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
	return sdfread.Continue(out, f.Poll), nil
}

// finish takes a partition whose restriction is done out of its source's
// board: the runner has moved its watermark to the end of time.
func (f *readFn) finish(partition string) {
	boards.With(f.Source, func(b *watermark.Board) { b.Finish(partition) })
}
