package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources"
)

// supervise runs the job p until it ends or ctx ends (then a graceful stop), with the live demo's
// feed beside it. planned says the stop came from --duration, not from Ctrl-C.
func (r *jobRun) supervise(ctx context.Context, p *beam.Pipeline, out io.Writer) (res outcome, planned bool) {
	o, sum := r.o, r.sum
	from := slog.Any("follow", o.Follow)
	if o.IsPubSub() {
		from = slog.String("archive", sum.Archive)
	}
	slog.Info("running", "source", sum.Source, from, "sink", sum.Sink, "runner", o.Runner)
	runCtx := ctx // Ctrl-C's, not --duration's
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		r.onClose(cancel)
	}
	if r.liveDemo {
		// The feed stops first at Ctrl-C or --duration, or when the job ends by itself (a failure).
		stop, wait := r.demo.Start(ctx, out, sum.Sink, r.uiURL)
		r.beforeStop = stop
		r.onClose(wait)
	}
	res = r.execute(ctx, p)
	if err := r.signal.Clear(context.WithoutCancel(ctx)); err != nil {
		slog.Warn("removing the stop request", "path", r.signal.Path(), "err", err)
	}
	planned = runCtx.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	return res, planned
}

// outcome is how a job ended.
type outcome struct {
	jobID string
	// metrics is the job's last reading (nil: the runner reported no counter).
	metrics     *reading
	interrupted bool
	// unsettled: why the stop did not see every record judged on committed counters and the sink
	// quiet ("": it did, or there was no stop).
	unsettled string
	// detached: why the launcher left a job it cannot stop (Dataflow) or could not (its cancel failed).
	detached string
	err      error
}

// unproven says why the run's end does not prove what a seal needs: a finished or settled job
// whose committed counters saw records, all judged ("": it does).
func (res outcome) unproven(sum *Summary) string {
	switch {
	case res.err != nil:
		return "the job did not complete"
	case res.metrics == nil:
		return "the job reported no metrics"
	case !res.metrics.committed:
		return "the runner reported no committed counters (attempted ones prove nothing)"
	case res.metrics.Read == 0:
		return "the runner's counters show no record read"
	case !sum.Conserved:
		return "the conservation identity does not hold"
	case sum.State != StateDone:
		return res.unsettled
	}
	return ""
}

// errCancelledOutside is a job its job service reports CANCELLED though the launcher asked no stop.
var errCancelledOutside = errors.New("cancelled outside the launcher (not by a stop it asked for): the job did not complete")

// jobSeq makes job names unique within the process.
var jobSeq atomic.Int64

// execute runs p and supervises it: progress, seals while a following run is quiet, and the
// graceful stop when ctx ends (see Run).
func (r *jobRun) execute(ctx context.Context, p *beam.Pipeline) outcome {
	o, mon := r.o, r.mon
	if err := localrunner.EnsureJobService(ctx, o.Runner); err != nil {
		return outcome{err: err}
	}
	localrunner.UseSafeOptions(o.Runner)
	if err := cli.UseSelfAsWorker(); err != nil {
		return outcome{err: err}
	}
	// The stop finds the job by a unique name: beam.Run hands out no id before the job ends.
	name, given := *jobopts.JobName, *jobopts.JobName != ""
	if name == "" {
		name = fmt.Sprintf("revenue-hourly-%d-%d-%d", os.Getpid(), jobSeq.Add(1), time.Now().UnixNano())
		*jobopts.JobName = name
		defer func() { *jobopts.JobName = "" }()
	}
	// The job's own context ends only as a last resort: it loses the metrics.
	jobCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	type result struct {
		pr  beam.PipelineResult
		err error
	}
	jf := &jobFigures{name: name}
	defer jf.close()
	if given { // a drawn name is this run's alone
		jf.before(ctx)
	}
	done := make(chan result, 1)
	go func() {
		pr, err := beam.Run(jobCtx, o.Runner, p)
		done <- result{pr, err}
	}()

	var (
		got            result
		interrupted    bool
		unsettled      string
		detached       string
		tick, sealTick <-chan time.Time
	)
	prog := &progress{w: os.Stdout, started: time.Now(), last: time.Now(), terminal: isTerminal(os.Stdout)}
	redraw := mon != nil && prog.terminal && o.Streaming()
	if mon != nil {
		mon.Start(jf.figures)
	}
	if o.ProgressEvery > 0 {
		t := time.NewTicker(o.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	if r.seal != nil && o.Follow {
		t := time.NewTicker(sealPoll)
		defer t.Stop()
		sealTick = t.C
	}
wait:
	for {
		select {
		case got = <-done:
			break wait
		case <-ctx.Done():
			interrupted = true
			if why := stopRefusal(o.Runner); why != "" {
				return outcome{interrupted: true, detached: fmt.Sprintf("stopping: refused: %s; job %s keeps running", why, name)}
			}
			if mon != nil {
				mon.SetState("STOPPING")
			}
			if r.beforeStop != nil {
				r.beforeStop()
			}
			if o.Streaming() && noLiveProof(o.profileRunner()) == "" { // without live metrics it proves nothing
				drainInFlight(o.Pipeline.WithDefaults(), func() bool {
					f, ok := jf.figures(context.Background())
					return ok && f.Counts.Conserved()
				})
			}
			got, unsettled, detached = stop(o, jf, r.signal, done, hardCancel)
			break wait
		case now := <-sealTick:
			if m := jf.metrics(ctx, liveLook); m != nil {
				r.seal.observe(context.WithoutCancel(ctx), now, readingOf(*m))
			}
		case <-tick:
			if redraw {
				live.Redraw(os.Stdout, mon.Snapshot(ctx))
			} else if f, ok := jf.figures(ctx); ok {
				prog.report(f.Counts, f.Partitions, flow.ReadAheadOf(r.readAhead), o.readAhead())
			}
		}
	}
	prog.done()
	res := outcome{interrupted: interrupted, unsettled: unsettled, detached: detached, err: got.err}
	if got.pr != nil {
		res.jobID = got.pr.JobID()
	}
	localrunner.RemoveJobPlaceholder(ctx, cmp.Or(res.jobID, jf.found())) // the SDK leaves one per loopback job
	if got.pr != nil && !*jobopts.Async {
		// No counter is no figure: zeros would pass conservation.
		if pm, ok := metrics.OfJob(got.pr, "the job's metrics are not available"); ok {
			if m := readingOf(pm); m.reported {
				res.metrics = &m
			}
		}
	}
	// Beam's universal runner returns no error for a job cancelled outside the launcher (Flink's UI).
	if id := cmp.Or(res.jobID, jf.found()); got.err == nil && !interrupted && jf.state(context.WithoutCancel(ctx), id) == jobpb.JobState_CANCELLED {
		res.err = fmt.Errorf("job %s: %w", id, errCancelledOutside)
	}
	if interrupted && got.err != nil && errors.Is(got.err, context.Canceled) {
		res.err = nil // the hard cancel: stopped, not failed
	}
	return res
}

// stop is the graceful stop: readers stop, the output settles, the job is cancelled through the
// job service; its context is cancelled only if that fails or the job does not end in time.
// unsettled says why the stop proves nothing a seal needs ("": it settled); detached, that the
// job may still run ("": it ended, or was never found).
func stop[R any](o Options, jf *jobFigures, signal sources.StopSignal, done <-chan R, hardCancel context.CancelFunc) (_ R, unsettled, detached string) {
	// Each reader sees the request within a poll interval and stops without finishing its
	// restriction; a filesystem that hangs must not hold the stop.
	ctx := context.Background()
	rctx, cancelRequest := context.WithTimeout(ctx, max(o.StopTimeout, 10*time.Second))
	err := signal.Request(rctx)
	cancelRequest()
	if err != nil {
		slog.Error("stopping: the stop request could not be written; the readers go on until the job is cancelled", "path", signal.Path(), "err", err)
	}
	stopAt, quietFor, noLive := time.Now(), o.cadence().quiet, noLiveProof(o.profileRunner())
	slog.Info("stopping: stop requested; waiting for the readers to stop and the output to settle before cancelling the job (Ctrl-C again to quit at once)",
		"request", signal.Path(), "quiet", quietFor, "at_most", o.StopTimeout)
	deadline := stopAt.Add(max(o.StopTimeout, 2*quietFor))

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var (
		writes    quietWatch
		settled   bool
		proven    bool // the last reading proves every record judged
		read      bool // the counters were read at least once
		committed bool // a reading had committed counters
	)
	for !settled {
		select {
		case r := <-done:
			return r, "the job ended during the stop", "" // on its own, or failed
		case <-tick.C:
		}
		// Unknown without counters; the job is looked for until it is submitted. A rehearsal reads
		// none where the runner it rehearses has none while the job runs.
		drained := true
		if m := jf.metrics(ctx, 0); m != nil && noLive == "" {
			r := readingOf(*m)
			drained, proven = writes.observe(time.Now(), r)
			read, committed = true, committed || r.committed
		}
		last := later(sink.LastWrite(), writes.changed)
		quiet := time.Since(later(last, stopAt)) >= quietFor
		settled = quiet && drained
		if !settled && time.Now().After(deadline) {
			slog.Warn("stopping: the output did not settle in time; cancelling anyway",
				"waited", time.Since(stopAt).Round(time.Millisecond), "sink_quiet", quiet, "records_drained", drained)
			break
		}
	}
	// Settled without committed counters is good enough to cancel, not to seal on.
	switch {
	case noLive != "":
		unsettled = noLive
	case !read:
		unsettled = "the job service gave no metrics during the stop"
	case !committed:
		unsettled = "the runner reported no committed counters during the stop (no live metrics)"
	case !proven:
		unsettled = "the runner's committed counters never showed every record judged during the stop"
	case !settled:
		unsettled = "the output did not settle before the stop timeout"
	}

	id := jf.found()
	if id == "" {
		slog.Warn("stopping: job service not reachable; cancelling the job's context (its metrics may be lost)")
		hardCancel()
		return <-done, unsettled, ""
	}
	err = jf.cancel(ctx)
	if err == nil {
		slog.Info("stopping: job cancelled", "job", id, "after", time.Since(stopAt).Round(time.Millisecond))
		select {
		case r := <-done:
			return r, unsettled, ""
		case <-time.After(o.StopTimeout):
			err = fmt.Errorf("it did not end within %s of its cancellation", o.StopTimeout)
		}
	}
	// The launcher's own context: on a job server (Flink) the job runs on without the launcher.
	hardCancel()
	return <-done, unsettled, fmt.Sprintf("stopping: %s; the launcher stopped waiting, but job %s may still be running on the job service at %s: cancel it there",
		cli.OneLine(err), id, cmp.Or(jf.endpoint, *jobopts.Endpoint))
}

// drainInFlight waits, before a graceful stop stops the readers, until every record read has its
// verdict, at most the idle timeout + the bound + 10 s. Prism hands dedup only elements its input
// watermark has passed: running readers (idle ones once the live feed stops) keep the watermark
// moving; stopped, they would freeze it and strand the last records.
func drainInFlight(po pipeline.Options, drained func() bool) {
	limit := po.Watermark.IdleTimeout + po.Watermark.OutOfOrderBound + 10*time.Second
	slog.Info("stopping: waiting for every record read to get its verdict before the readers stop", "at_most", limit)
	deadline := time.Now().Add(limit)
	for !drained() {
		if time.Now().After(deadline) {
			slog.Warn("stopping: records still in flight; stopping the readers anyway", "waited", limit)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stopRefusal says why the launcher cannot stop a job on runner gracefully ("": it can): Dataflow
// has no Beam job service, its SDK runner ignores the context, and drain closes windows early.
func stopRefusal(runner string) string {
	if capability.For(runner).Name == "dataflow" {
		return "the launcher cannot stop a Dataflow job: cancel it with `gcloud dataflow jobs cancel` (not drain, which closes every open window early; docs/restart.md)"
	}
	return ""
}
