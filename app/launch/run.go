package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/io/files"
	// These two register backends in every process of this binary, the
	// workers included (they run it): gs:// paths for io/files, and every
	// sink scheme for sink.Published (the revision step's seed).
	_ "github.com/revenue-stream/hourly/io/files/gcs"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/io/sources"
	"github.com/revenue-stream/hourly/io/sources/pubsub"
	"github.com/revenue-stream/hourly/pipeline"
)

// Run runs the job o describes, prints its summary to out and returns it.
//
// ctx ending is a graceful stop (SIGINT, SIGTERM): the readers stop reading
// but never finish, so no window gets a FINAL row before its correction
// period has passed; once the sink has seen no write for o.QuietPeriod (at
// most o.StopTimeout) the job is cancelled, and the summary is still
// printed. A replay that runs to its end is DONE; a followed folder and a
// Pub/Sub subscription are unbounded and end only so.
//
// Errors before the job starts are *ConfigError (exit 2). A run that failed,
// or whose figures break the conservation identity, returns an error along
// with its summary (exit 1).
//
// Before it submits the job, Run checks the pipeline proto against the
// runner's capability profile (cli.CheckedProto): a pipeline the runner
// cannot run as written is a *ConfigError. With o.DryRun, Run builds the
// same pipeline without contacting any service (no sink opened, no
// control-folder probe, no demo generated, no bucket listed, no resume
// point read: it is built as the first run on an empty sink), writes its
// proto (see DryRun) and returns a nil summary.
func Run(ctx context.Context, o Options, out io.Writer) (*Summary, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o, err := o.absolutePaths()
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	liveDemo := o.Demo == DemoLive
	if liveDemo {
		o.Follow = true // the feed's folder is followed
	}
	started := time.Now()
	sum := &Summary{Source: o.Source, Demo: o.Source == "", Follow: o.Streaming(), Archive: o.ArchiveDir(),
		Sink: o.Sink.String(), Runner: o.Runner, Started: started}

	// Everything up to the job's start is set-up: a failure is a one-line
	// error and exit 2, as for a bad flag.
	// A sink that cannot be opened, or holds another configuration's rows,
	// is refused before the demo log is generated; for a source the user
	// gave, after the control folder's probe, so that a refused stop request
	// opens no sink. (A demo's control folder lies in the log's folder,
	// which must not exist before the log is generated.)
	generated := sum.Demo || liveDemo
	dry := o.DryRun != ""
	if liveDemo && !dry {
		if err := o.startLiveSinkClean(); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	if generated && !dry {
		if err := checkSink(ctx, o.Sink, o.runConfig()); err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("--sink=%s: %w", o.Sink, err)}
		}
	}
	o.warnMemory()
	po := o.Pipeline.WithDefaults()
	var feed gen.LiveConfig
	switch {
	case liveDemo:
		sum.Source = o.LiveDir
		var err error
		if feed, err = o.liveFeed(po); err != nil {
			return nil, &ConfigError{Err: err}
		}
		if dry {
			break
		}
		if err := prepareLiveDir(o.LiveDir, feed); err != nil {
			return nil, &ConfigError{Err: err}
		}
	case sum.Demo:
		sum.Source = o.DemoDir
		if dry {
			break
		}
		if _, err := ensureDemo(o.DemoDir); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	if !o.Streaming() && po.Triggers.Early > 0 {
		slog.Info("replay: EARLY firings off: a bounded replay has no EARLY rows (processing time says nothing about history)",
			"early", po.Triggers.Early)
		po.Triggers.Early = 0
	}
	sum.Settings = settings(po)
	fo := o.folderOptions(po)
	fo.Unlisted = dry && unlisted(sum.Source)
	// The sources read against the job's read-ahead account, which they
	// fill and the too-late gate and the dedup step drain: in this process
	// only (prism has no backpressure; see flow.ReadAhead).
	var readAhead string
	if fo.ReadAheadRecords > 0 && !o.IsPubSub() {
		readAhead = flow.NewReadAheadKey()
		fo.ReadAhead, po.ReadAhead = readAhead, readAhead
		defer flow.ReleaseReadAhead(readAhead)
	}
	if sum.Demo && !fo.Unlisted {
		if err := sources.Validate(sum.Source, fo); err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("demo: %w", err)}
		}
	}
	// The graceful stop's request, for this run only (see stopSignal).
	signal, err := o.stopSignal(ctx, sum.Source, !dry)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	fo.Stop = signal
	if !generated && !dry {
		if err := checkSink(ctx, o.Sink, o.runConfig()); err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("--sink=%s: %w", o.Sink, err)}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("interrupted before the job started: %w", err)}
	}
	// A restart or a second replay continues each key's changelog where the
	// sink left it: revisions go on from the stored one, nothing dips, and a
	// window the sink holds as FINAL stays as it is. The rows are read when
	// the job runs, on a worker: never through the job graph.
	po.Published = o.Sink
	var (
		read func(s beam.Scope) beam.PCollection
		seal *sealer
	)
	if o.IsPubSub() {
		pso := o.pubsubOptions(po)
		pso.Stop = signal
		read = func(s beam.Scope) beam.PCollection { return pubsub.Read(s, o.Source, pso) }
	} else {
		// A restart re-reads only what dedup and the open windows need,
		// from the points sealed once their records' outputs were durable
		// (resume.go, seal.go). The workers write this run's checkpoints,
		// stamped with its token, as they read.
		if !dry {
			if fo.Resume, po.PublishedBound, err = resumePoints(ctx, o.Sink, sum.Source, po); err != nil {
				return nil, &ConfigError{Err: err}
			}
		}
		if signal.Enabled() && !dry {
			seal = newSealer(o.Sink, signal.Token, po, o.quietPeriod(), o.sealEvery(), o.profileRunner(), fo.Resume)
			defer seal.close()
		}
		read = func(s beam.Scope) beam.PCollection {
			records, progress := sources.ReadFolder(s, sum.Source, fo)
			if signal.Enabled() { // the seal's evidence
				sinks.WriteProgress(s, o.Sink, signal.Token, progress, sinks.WithFlush(o.flushPolicy()))
			}
			return records
		}
	}
	p, err := build(read, po, o.Sink, sinks.WithFlush(o.flushPolicy()))
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	// What the runner would be sent, refused here if it needs what the
	// runner lacks: one line, exit 2, before any submission.
	pb, err := cli.CheckedProto(ctx, o.profileRunner(), p)
	if err != nil && o.Rehearse != "" {
		return nil, &ConfigError{Err: fmt.Errorf("--rehearse=%s: %w", o.Rehearse, err)}
	} else if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("--runner=%s: %w", o.Runner, err)}
	}
	if dry {
		if err := cli.WriteDryRun(o.DryRun, out, pb); err != nil {
			return nil, &ConfigError{Err: err}
		}
		return nil, nil
	}
	if o.PrismUIPort > 0 {
		// The UI needs the job service's address: start that first.
		if err := localrunner.EnsureJobService(ctx, o.Runner); err != nil {
			return nil, &ConfigError{Err: err}
		}
		if err := startPrismUI(o.PrismUIPort); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}

	// The live views: the terminal table of a streaming run on a terminal,
	// and the page of --ui.
	var (
		mon   *live.Monitor
		hooks runHooks
	)
	if o.UI != "" || o.MetricsAddr != "" || (o.Streaming() && isTerminal(os.Stdout)) {
		mon = &live.Monitor{Title: "hourly revenue · " + sum.Source, Sink: o.Sink, SinkEvery: o.liveSinkEvery(),
			Window: po.Triggers.Window, AllowedLateness: po.Triggers.AllowedLateness, OutOfOrderBound: po.Watermark.OutOfOrderBound}
		if liveDemo {
			mon.Title = "hourly revenue · live demo"
		}
		for _, name := range settingOrder {
			if v := sum.Settings[name]; v != "" && v != "0s" {
				mon.Settings = append(mon.Settings, live.Setting{Name: name, Value: v})
			}
		}
		mon.Settings = append(mon.Settings, live.Setting{Name: "sink", Value: sum.Sink})
		defer mon.Close()
	}
	uiURL := ""
	if o.UI != "" {
		addr, _ := uiAddr(o.UI) // checked by Validate
		srv, err := live.Serve(addr, mon)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		defer srv.Close()
		uiURL = srv.Addr()
		slog.Info("live page", "url", srv.URL(), "metrics", srv.URL()+"metrics")
	}
	if o.MetricsAddr != "" {
		addr, _ := metricsAddr(o.MetricsAddr) // checked by Validate
		srv, err := live.ServeMetrics(addr, mon)
		if err != nil {
			return nil, &ConfigError{Err: err}
		}
		defer srv.Close()
		slog.Info("metrics for Prometheus", "url", srv.URL()+"metrics")
	}

	if o.IsPubSub() {
		slog.Info("running", "source", sum.Source, "archive", sum.Archive, "sink", sum.Sink, "runner", o.Runner)
	} else {
		slog.Info("running", "source", sum.Source, "follow", o.Follow, "sink", sum.Sink, "runner", o.Runner)
	}
	planned := func() bool { return false } // the stop came from --duration
	runCtx := ctx                           // Ctrl-C's, not --duration's
	if o.Duration > 0 {
		timed, cancel := context.WithTimeout(ctx, o.Duration)
		defer cancel()
		ctx = timed
		planned = func() bool { return runCtx.Err() == nil && errors.Is(timed.Err(), context.DeadlineExceeded) }
	}
	if liveDemo {
		liveBanner(out, o.LiveDir, sum.Sink, uiURL, po, feed)
		// The feed stops first at Ctrl-C or --duration (see drainFeed), or
		// when the job ends by itself (a failure).
		feedCtx, stopFeed := context.WithCancel(context.WithoutCancel(ctx))
		wait := startLiveFeed(feedCtx, o.LiveDir, feed)
		hooks.beforeStop = func(drained func() bool) { stopFeed(); drainFeed(po, drained) }
		defer func() {
			stopFeed()
			st := wait()
			slog.Info("live feed stopped", "lines", st.Lines, "files", st.Files, "events", st.Events, "duplicates", st.Duplicates,
				"conflicts", st.Conflicts, "late", st.Late, "backlog", st.Backlog, "too_late", st.TooLate,
				"malformed", st.Malformed, "idle_gaps", st.IdleGaps)
		}()
	}
	hooks.mon, hooks.signal, hooks.seal = mon, signal, seal
	hooks.readAhead = flow.ReadAheadOf(readAhead)
	res := execute(ctx, o, p, hooks)
	if err := signal.Clear(context.WithoutCancel(ctx)); err != nil {
		slog.Warn("removing the stop request", "path", signal.Path(), "err", err)
	}
	sum.Duration = time.Since(started)
	if readAhead != "" {
		sum.ReadAhead = &ReadAheadFigures{Budget: fo.ReadAheadRecords, Peak: hooks.readAhead.Peak(), PastBudget: hooks.readAhead.PastBudget()}
	}
	sum.JobID, sum.Interrupted = res.jobID, res.interrupted
	if *jobopts.Async && res.err == nil {
		// Submitted, not run: the job's figures and rows are still to
		// come, and no resume point can be proven (docs/operations.md).
		fmt.Fprintf(out, "job %s submitted (--async): the launcher does not wait for it, so there is no summary and no resume point is sealed\n", res.jobID)
		return sum, nil
	}
	if res.detached != "" {
		return sum, errors.New(res.detached)
	}
	if res.metrics != nil {
		sum.Counts = *res.metrics
	}
	switch {
	case res.err != nil:
		sum.State, sum.Error = StateFailed, cli.OneLine(res.err)
	case res.interrupted && planned():
		sum.State, sum.Planned = StateDone, true
	case res.interrupted:
		sum.State = StateCancelled
	default:
		sum.State = StateDone
	}
	if mon != nil {
		mon.SetState(sum.State)
	}

	// The job is over: release the loopback workers' handles (runners do
	// not promise Teardown) before reading the sink back. The context may
	// have ended with the interruption; the read-back must still happen.
	bg := context.WithoutCancel(ctx)
	if err := sinks.CloseShared(); err != nil {
		slog.Warn("closing the sink after the job", "err", err)
	}
	view, viewErr := readSink(bg, o.Sink)
	if viewErr != nil {
		slog.Error("reading the sink back", "sink", sum.Sink, "err", viewErr)
	}
	sum.view = view

	check := sum.Counts.Check()
	sum.Conserved, sum.Identity = check == nil, sum.Counts.Identity()
	if res.metrics == nil {
		check = errors.New("the job reported no metrics: the conservation identity cannot be checked")
		sum.Conserved, sum.unchecked = false, true
	}
	if check != nil && res.err == nil {
		slog.Error("conservation check failed", "err", check)
	}
	if seal != nil {
		// Every output is durable when the job finished, or its graceful
		// stop settled on the runner's committed counters, and every
		// record read has its verdict in the committed counters.
		if err := seal.final(bg, res.unproven(sum)); err != nil {
			slog.Warn("sealing the run's resume points; a restart re-reads from the previous ones", "err", err)
		}
	}

	if err := sum.WriteText(out); err != nil {
		slog.Error("printing the summary", "err", err)
	}
	if o.Report != "" {
		if err := writeReport(o.Report, sum, po); err != nil {
			slog.Error("writing the run report", "err", err)
		} else {
			slog.Info("run report written", "path", o.Report)
		}
	}
	if uiURL != "" && runCtx.Err() == nil && keepPage() {
		// The job ended by itself or at --duration, with a person at the
		// terminal: the page stays, with its final state, until Ctrl-C.
		slog.Info("the job has ended; the live page stays up until Ctrl-C", "url", uiURL, "state", sum.State)
		<-runCtx.Done()
	}
	return sum, errors.Join(res.err, check, viewErr)
}

// keepPage says whether a run with --ui keeps its page up after the job
// has ended, until Ctrl-C: when a person is at the terminal. A script's
// launcher (stdout not a terminal) returns at once.
var keepPage = func() bool { return isTerminal(os.Stdout) }

// absolutePaths makes the local paths of a run whose workers run in other
// processes absolute: a worker's working directory is not the launcher's
// (--shared-filesystem promises the same paths, not the same directory).
func (o Options) absolutePaths() (Options, error) {
	if cli.WorkersInProcess(o.Runner, *jobopts.EnvironmentType) {
		return o, nil
	}
	abs := func(p *string) error {
		if *p == "" || !cli.LocalPath(*p) || strings.Contains(*p, "://") {
			return nil
		}
		a, err := filepath.Abs(*p)
		*p = a
		return err
	}
	var errs []error
	if o.Sink.Scheme == sink.SchemeSQLite || o.Sink.Scheme == sink.SchemeJSONL {
		errs = append(errs, abs(&o.Sink.Path))
	}
	if !o.IsPubSub() {
		errs = append(errs, abs(&o.Source))
	}
	errs = append(errs, abs(&o.DemoDir), abs(&o.PubSubArchive))
	return o, errors.Join(errs...)
}

// stopSignal is the run's graceful-stop request in its control folder
// (ControlDir), with a token no other run has: an old request left there
// never stops this run. A local folder is made absolute (a worker's working
// directory is not the launcher's) and created now, so that one the
// launcher cannot write is refused before any work. A streaming run, which
// ends only by a stop, also probes the folder with a write (a read-only
// gs:// source bucket would otherwise show only at the stop, as a cancel
// after the stop timeout); a replay ends by itself, and one of a read-only
// bucket must not be refused for a stop it may never need.
//
// A dry run (prepare false) names the folder and its token only: nothing
// is created or probed.
func (o Options) stopSignal(ctx context.Context, source string, prepare bool) (sources.StopSignal, error) {
	dir := o.ControlDir(source)
	if dir == "" {
		return sources.StopSignal{}, nil
	}
	if files.IsLocal(dir) {
		a, err := filepath.Abs(dir)
		if err != nil {
			return sources.StopSignal{}, fmt.Errorf("--control=%s: %w", dir, err)
		}
		dir = a
	}
	signal := sources.NewStopSignal(dir)
	if o.RunToken != "" {
		signal.Token = o.RunToken
	}
	if err := signal.Validate(); err != nil {
		return signal, fmt.Errorf("--control: %w", err)
	}
	if !prepare {
		return signal, nil
	}
	if err := signal.Prepare(); err != nil {
		return signal, fmt.Errorf("--control=%s: %w (pass --control=FOLDER the launcher can write)", dir, err)
	}
	if o.Streaming() {
		if err := signal.Probe(ctx); err != nil {
			if ctx.Err() != nil { // Ctrl-C during the probe: not the folder's fault
				return signal, fmt.Errorf("interrupted before the job started: %w", ctx.Err())
			}
			return signal, fmt.Errorf("the graceful stop cannot write its request to %s: %w (pass --control=FOLDER the launcher can write, e.g. --control=gs://BUCKET/PATH)", dir, err)
		}
	}
	return signal, nil
}

// unlisted reports whether a dry run must build the read of source without
// listing it: a bucket (listing it contacts the service) or a folder that
// is not there yet (the demo's log, generated at the first real run).
func unlisted(source string) bool {
	if !files.IsLocal(source) {
		return true
	}
	_, err := os.Stat(source)
	return err != nil
}

// ConfigError is a bad command line, setting, source or sink, found before
// any work: one line, exit 2 (SPEC §6).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return cli.OneLine(e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// build is the design card's shape: read the source (the folder or the
// subscription), compute, write.
func build(read func(beam.Scope) beam.PCollection, po pipeline.Options, spec sink.Spec, opts ...sinks.WriteOption) (p *beam.Pipeline, err error) {
	// Graph construction reports misuse by panicking (beam.ParDo on a bad
	// DoFn, a source that cannot list its partitions): turn that into the
	// one-line error a command owes its user.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("building the pipeline: %v", r)
		}
	}()
	p, s := beam.NewPipelineWithRoot()
	records := read(s)
	out, err := pipeline.Build(s, records, po)
	if err != nil {
		return nil, err
	}
	sinks.Write(s, spec, out.Rows, out.TooLate, out.Conflicts, out.Quarantined, opts...)
	return p, nil
}

// settingOrder lists Summary.Settings in the order of SPEC §6.
var settingOrder = []string{"window", "early", "ooo-bound", "idle-timeout", "idle-advance", "allowed-lateness",
	"dedup-retention", "max-future", "max-age", "max-line", "dimensions"}

func settings(po pipeline.Options) map[string]string {
	return map[string]string{
		"window":           po.Triggers.Window.String(),
		"early":            po.Triggers.Early.String(),
		"ooo-bound":        po.Watermark.OutOfOrderBound.String(),
		"idle-timeout":     po.Watermark.IdleTimeout.String(),
		"idle-advance":     po.Watermark.IdleAdvance.String(),
		"allowed-lateness": po.Triggers.AllowedLateness.String(),
		"dedup-retention":  po.DedupRetention.String(),
		"max-future":       po.Event.MaxFuture.String(),
		"max-age":          po.Event.MaxAge.String(),
		"max-line":         cli.FormatSize(po.Event.MaxLine),
		"dimensions":       strings.Join(po.Event.Dimensions, ","),
	}
}

// outcome is how a job ended.
type outcome struct {
	jobID   string
	metrics *Counts
	// committed: metrics are the runner's committed counters.
	committed   bool
	interrupted bool
	// settled: the graceful stop saw every record judged and the sink
	// quiet before it cancelled the job, on a reading of the runner's
	// committed counters that proves it (reading.proves); unsettled says
	// why not.
	settled   bool
	unsettled string
	// detached: the launcher stopped supervising a job it cannot stop
	// (a Dataflow job at a graceful stop), in one line.
	detached string
	err      error
}

// unproven says why the run's end proves nothing a seal needs ("" when it
// proves all of it): the job finished, or its graceful stop settled, and
// the runner's committed counters saw records, all of them judged.
func (res outcome) unproven(sum *Summary) string {
	switch {
	case res.err != nil:
		return "the job failed"
	case res.metrics == nil:
		return "the job reported no metrics"
	case !res.committed:
		return "the runner reported no committed counters (attempted ones prove nothing)"
	case res.metrics.Read == 0:
		return "the runner's counters show no record read"
	case !sum.Conserved:
		return "the conservation identity does not hold"
	case sum.State != StateDone && !res.settled:
		return res.unsettled
	}
	return ""
}

// jobSeq makes job names unique within the process.
var jobSeq atomic.Int64

// execute runs p and supervises it: when ctx ends it stops the job
// gracefully (see Run).
// runHooks are what a run adds to the supervision of its job: the live
// views' monitor, and a step before the graceful stop.
type runHooks struct {
	mon *live.Monitor
	// beforeStop runs when ctx ends, before the readers are stopped;
	// drained reports whether every record read so far has its verdict.
	beforeStop func(drained func() bool)
	// signal is the run's stop request, written by the graceful stop.
	signal sources.StopSignal
	// seal, for a folder source, seals resume points while a following
	// run is quiet (nil: none).
	seal *sealer
	// readAhead is the sources' read-ahead account, for the progress line
	// (nil: none).
	readAhead *flow.ReadAhead
}

func execute(ctx context.Context, o Options, p *beam.Pipeline, hooks runHooks) outcome {
	mon := hooks.mon
	if err := localrunner.EnsureJobService(ctx, o.Runner); err != nil {
		return outcome{err: err}
	}
	// Prism's runner-initiated splits replay elements of bundles with
	// timers (counts double), and its job metrics lose updates unless the
	// workers gate them: on prism only, in this process or a prism job
	// server (--runner=prism --endpoint=...); see localrunner.UseSafeOptions.
	localrunner.UseSafeOptions(o.Runner)
	if err := cli.UseSelfAsWorker(); err != nil {
		return outcome{err: err}
	}
	// A unique job name is how the stop path finds this job in the job
	// service (beam.Run does not hand out the id before the job ends).
	name := *jobopts.JobName
	if name == "" {
		name = fmt.Sprintf("revenue-hourly-%d-%d-%d", os.Getpid(), jobSeq.Add(1), time.Now().UnixNano())
		*jobopts.JobName = name
		defer func() { *jobopts.JobName = "" }()
	}

	// The job's own context ends only as a last resort (see stop): ending it
	// loses the job's metrics.
	jobCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	type result struct {
		pr  beam.PipelineResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		pr, err := beam.Run(jobCtx, o.Runner, p)
		done <- result{pr, err}
	}()

	var (
		r           result
		interrupted bool
	)
	// Progress comes from the job's metrics in the job service, wherever
	// the workers run.
	var tick <-chan time.Time
	prog := newProgress(os.Stdout)
	var view *termView
	jf := &jobFigures{name: name}
	defer jf.close()
	if mon != nil {
		mon.Start(jf.figures)
		if prog.terminal && o.Streaming() {
			view = &termView{w: os.Stdout}
		}
	}
	if o.ProgressEvery > 0 {
		t := time.NewTicker(o.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	// A following folder run seals resume points whenever it is quiet.
	var sealTick <-chan time.Time
	if hooks.seal != nil && o.Follow {
		t := time.NewTicker(sealPoll)
		defer t.Stop()
		sealTick = t.C
	}
	var (
		settled   bool
		unsettled string
	)
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-ctx.Done():
			interrupted = true
			if why := stopRefusal(o.Runner); why != "" {
				// The job runs on; beam.Run waits for its end, and so
				// would the launcher.
				return outcome{interrupted: true, detached: fmt.Sprintf("stopping: refused: %s; job %s keeps running", why, name)}
			}
			if mon != nil {
				mon.SetState("STOPPING")
			}
			drained := func() bool {
				f, ok := jf.figures(context.Background())
				return ok && f.Counts.Read == f.Counts.Verdicts()
			}
			switch {
			case hooks.beforeStop != nil:
				hooks.beforeStop(drained)
			case o.Streaming():
				// Readers still running keep the watermark moving (idle
				// partitions leave the minimum), so records already read
				// reach their verdict; once the readers stop, a stateful
				// step holds what its frozen watermark has not passed, and
				// a stop would leave them in flight. The figures come from
				// the runner, wherever the workers run.
				drainInFlight(o.Pipeline.WithDefaults(), drained)
			}
			r, settled, unsettled = stop(o, name, hooks.signal, done, hardCancel)
			break wait
		case now := <-sealTick:
			if r, ok := jf.reading(ctx); ok {
				// A stop does not cut a seal short: it would be wasted.
				hooks.seal.observe(context.WithoutCancel(ctx), now, r)
			}
		case <-tick:
			if view != nil {
				view.draw(mon.Snapshot(ctx))
			} else if f, ok := jf.figures(ctx); ok {
				prog.report(f.Counts, f.Partitions, hooks.readAhead, o.readAhead())
			}
		}
	}
	prog.done()
	res := outcome{interrupted: interrupted, settled: settled, unsettled: unsettled, err: r.err}
	if r.pr != nil {
		res.jobID = r.pr.JobID()
	}
	if r.pr != nil && !*jobopts.Async {
		func() {
			// A result whose metrics could not be fetched panics on Metrics().
			defer func() {
				if p := recover(); p != nil {
					slog.Warn("the job's metrics are not available", "panic", p)
				}
			}()
			// No counter at all is no figure: zeros would pass the
			// conservation check.
			if m := readingOf(r.pr.Metrics()); m.reported {
				res.metrics, res.committed = &m.Counts, m.committed
			}
		}()
	}
	if interrupted && r.err != nil && errors.Is(r.err, context.Canceled) {
		// The hard cancel: the job was stopped, not failed.
		res.err = nil
	}
	return res
}

// stop is the graceful stop: readers stop, the output settles, the job is
// cancelled through the job service; the job's context is cancelled only if
// that fails or the job does not end in time.
func stop[R any](o Options, name string, signal sources.StopSignal, done <-chan R, hardCancel context.CancelFunc) (_ R, settled bool, unsettled string) {
	// The readers, folder or Pub/Sub, on whatever worker: each sees the
	// request within a poll interval, then stops pulling or listing and
	// never finishes its restriction.
	ctx := context.Background()
	// A filesystem that hangs must not hold the stop: the cancel below
	// still comes.
	rctx, cancelRequest := context.WithTimeout(ctx, max(o.StopTimeout, 10*time.Second))
	err := signal.Request(rctx)
	cancelRequest()
	if err != nil {
		// The readers go on; the wait below ends at StopTimeout and the
		// cancel then catches records in flight.
		slog.Error("stopping: the stop request could not be written; the readers go on until the job is cancelled", "path", signal.Path(), "err", err)
	}
	stopAt := time.Now()
	slog.Info("stopping: stop requested; waiting for the readers to stop and the output to settle before cancelling the job (Ctrl-C again to quit at once)",
		"request", signal.Path(), "quiet", o.quietPeriod(), "at_most", o.StopTimeout)
	deadline := stopAt.Add(max(o.StopTimeout, 2*o.quietPeriod()))

	var j *job
	defer func() {
		if j != nil {
			j.close()
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var (
		writes    quietWatch
		proven    bool // the last reading of the runner's counters proves every record judged
		read      bool // the runner's counters were read at least once
		committed bool // a reading had committed counters
	)
	for !settled {
		select {
		case r := <-done:
			return r, false, "the job ended during the stop" // on its own, or failed
		case <-tick.C:
		}
		if j == nil {
			j, _ = findJob(ctx, *jobopts.Endpoint, name) // retried: the job may not be submitted yet
		}
		// Every record read has its verdict: nothing is in flight between
		// the readers and dedup. Unknown without counters.
		drained := true
		if j != nil {
			if m, err := j.metrics(ctx); err == nil {
				// The sink's write counters, for workers elsewhere:
				// LastWrite sees only this process's writers.
				r := readingOf(*m)
				drained, proven = writes.observe(time.Now(), r)
				read, committed = true, committed || r.committed
			}
		}
		last := later(sinks.LastWrite(), writes.changed)
		// A BigQuery row counts as written when the append step buffers
		// it: quietPeriod adds the flush interval that appends it.
		quiet := time.Since(later(last, stopAt)) >= o.quietPeriod()
		settled = quiet && drained
		if !settled && time.Now().After(deadline) {
			slog.Warn("stopping: the output did not settle in time; cancelling anyway",
				"waited", time.Since(stopAt).Round(time.Millisecond), "sink_quiet", quiet, "records_drained", drained)
			break
		}
	}
	// Settled without the runner's committed counters is a guess, good
	// enough to cancel but not to seal resume points on: attempted ones
	// are zero on a runner without live metrics, and look drained.
	switch why := noLiveProof(o.Runner); {
	case why != "":
		unsettled = why
	case !read:
		unsettled = "the job service gave no metrics during the stop"
	case !committed:
		unsettled = "the runner reported no committed counters during the stop (no live metrics)"
	case !proven:
		unsettled = "the runner's committed counters never showed every record judged during the stop"
	case !settled:
		unsettled = "the output did not settle before the stop timeout"
	}
	settled = settled && unsettled == ""

	if j != nil {
		if err := j.cancel(ctx); err != nil {
			slog.Warn("stopping: cancel through the job service failed; cancelling the job's context", "err", err)
			hardCancel()
		} else {
			slog.Info("stopping: job cancelled", "job", j.id, "after", time.Since(stopAt).Round(time.Millisecond))
		}
	} else {
		slog.Warn("stopping: job service not reachable; cancelling the job's context (its metrics may be lost)")
		hardCancel()
	}
	select {
	case r := <-done:
		return r, settled, unsettled
	case <-time.After(o.StopTimeout):
		slog.Warn("stopping: the job did not end after its cancellation; cancelling its context")
		hardCancel()
		return <-done, settled, unsettled
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stopRefusal says why the launcher cannot stop a job on runner gracefully
// ("" when it can). Dataflow has no Beam job service: the launcher cannot
// cancel the job, and the SDK's Dataflow runner waits for the job's end
// whatever its context says, so a stop would only leave the launcher
// waiting. Drain is no graceful stop for this pipeline either: Dataflow
// then advances the watermark to the end of time, and every open window
// would get its FINAL row before its correction period.
func stopRefusal(runner string) string {
	if capability.For(runner).Name == "dataflow" {
		return "the launcher cannot stop a Dataflow job: cancel it with `gcloud dataflow jobs cancel` (not drain, which closes every open window early; docs/restart.md)"
	}
	return ""
}
