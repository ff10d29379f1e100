package sources

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
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

// boards holds each source's partitions' reported watermarks, so a reader
// reports min(own, board) (prism's per-stage watermark; see the package doc).
// On a distributed runner it only lowers an estimate to the runner's minimum.
var boards = localrunner.NewShared(watermark.NewBoard)

// readFn reads one partition per element (its name), with one restriction
// per partition.
type readFn struct {
	Dir        string
	Source     string // keys this application on the watermark board
	Partitions []string
	Starts     []model.Checkpoint // parsed FolderOptions.Resume; MaxValid restores the watermark
	Opts       FolderOptions      // with defaults

	sdfread.Shape[restriction, string]
	open      *openFiles
	stop      *StopWatch
	readAhead *flow.ReadAhead
}

// staleAfter is how long (ms) a board entry not refreshed still counts: a
// partition refreshed no more is processed on another worker.
func (f *readFn) staleAfter() int64 {
	return max(2*time.Minute, 20*f.Opts.PollInterval).Milliseconds()
}

func (f *readFn) Teardown() { f.open.closeAll() }

func (f *readFn) Setup() {
	f.open = newOpenFiles()
	f.stop = f.Opts.Stop.Watch(f.Opts.PollInterval)
	f.readAhead = flow.ReadAheadOf(f.Opts.ReadAhead)
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

func (f *readFn) CreateTracker(rest restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(sdfread.NewCheckpointTracker("source", rest, !f.Opts.Follow))
}

func (f *readFn) ProcessElement(ctx context.Context, we *sdfread.WatermarkEstimator, rt *sdf.LockRTracker, partition string,
	emit func(beam.EventTime, model.Record), progress func(beam.EventTime, model.Checkpoint)) (sdf.ProcessContinuation, error) {
	stopping := false
	rest, done, pc, err := sdfread.Begin[restriction](rt, func() string { return fmt.Sprintf("source partition %q", partition) }, func() bool {
		stopping = f.stop.Stopped()
		return stopping && !f.Opts.Follow // a follower's last pass reads on
	}, f.Opts.PollInterval)
	if done {
		if rest.Closed {
			f.finish(partition)
		}
		return pc, err
	}
	wm := watermark.Resume(f.Opts.Watermark, rest.State).Watermark()
	holds := true
	boards.With(f.Source, func(b *watermark.Board) { holds = b.Holds(partition, time.Now().UnixMilli(), f.staleAfter()) })
	if !f.readAhead.Room(f.Opts.ReadAheadRecords, f.Opts.MaxPerCall, f.Opts.ReadAheadLead, wm, holds) {
		// The dedup step is behind (prism has no backpressure).
		return sdf.ResumeProcessingIn(readAheadPause), nil
	}

	r := newReader(f.Dir, partition, rest, f.Opts)
	r.horizon = f.readAhead.CallEnd(f.Opts.ReadAheadLead, wm)
	r.source, r.open = f.Source, f.open
	r.stop = f.stop.Stopped
	if stopping {
		// A follower's last pass: the current file to its end (SPEC §3).
		r.final, r.stop = true, func() bool { return false }
	}
	r.claim = func(next restriction) bool { return sdfread.Claim(rt, next) }
	// The call's valid records (the events dedup will take in) join the
	// read-ahead account as it ends, so none is ever in flight uncounted.
	queued := 0
	defer func() { f.readAhead.Queued(queued, r.stamper.Watermark()) }()
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
		// Stamped like the partition's next record.
		progress(beam.EventTime(sdfread.ToMtime(r.stamper.Watermark())), c)
	}
	out, err := r.run()
	if err != nil {
		return sdf.StopProcessing(), err
	}
	if stopping && out != sdfread.Lost {
		metrics.Counter(metrics.StoppedCalls).Inc(ctx, 1)
		out = sdfread.Stopped
	}
	if out == sdfread.Finished && rt.TryClaim(r.rest) {
		f.finish(partition)
	}
	switch out {
	case sdfread.Lost, sdfread.Stopped, sdfread.Finished:
		return sdfread.Continue(out, f.Opts.PollInterval), nil
	}

	now := time.Now().UnixMilli()
	var active int64
	var anyActive bool
	boards.With(f.Source, func(b *watermark.Board) { active, anyActive = b.Active(partition, now, f.staleAfter()) })
	wentIdle := r.watermarkState(now, active, anyActive)
	if !rt.TryClaim(r.rest) {
		return sdf.StopProcessing(), nil
	}
	own, w := r.rest.Reported, int64(0)
	boards.With(f.Source, func(b *watermark.Board) {
		if r.rest.MaxValid == model.NoWatermark && !slices.Contains(f.Partitions, partition) {
			// A discovered partition follows the others until it has data.
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
	idle := int64(0)
	if r.rest.Idle {
		idle = 1
	}
	metrics.Gauge(metrics.PartitionIdle(partition)).Set(ctx, idle)
	return sdfread.End(ctx, we, out, f.Opts.PollInterval, partition, wentIdle, own, w, now), nil
}

// finish takes a partition whose restriction is done off its board.
func (f *readFn) finish(partition string) {
	boards.With(f.Source, func(b *watermark.Board) { b.Finish(partition) })
}
