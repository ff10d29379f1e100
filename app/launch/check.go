package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/io/sources"
)

// check is the run's set-up, before the job is built: the options
// validated, the sink's run_config checked, the demo's log generated, the
// source checked and the stop request's folder prepared. A failure is a
// *ConfigError: one line and exit 2, as for a bad flag. A dry run contacts
// nothing: no sink opened, no demo generated, no control folder probed.
func (r *jobRun) check(ctx context.Context) error {
	if err := r.o.Validate(); err != nil {
		return err
	}
	o, err := r.o.absolutePaths()
	if err != nil {
		return &ConfigError{Err: err}
	}
	r.liveDemo, r.dry = o.Demo == DemoLive, o.DryRun != ""
	if r.liveDemo {
		o.Follow = true // the feed's folder is followed
	}
	r.o = o
	r.sum = &Summary{Source: o.Source, Demo: o.Source == "", Follow: o.Streaming(), Archive: o.ArchiveDir(),
		Sink: o.Sink.String(), Runner: o.Runner, Started: time.Now()}
	// A sink that cannot be opened, or holds another configuration's rows,
	// is refused before a demo's log is generated (its control folder lies
	// in the log's folder, which must not exist before); for a source the
	// user gave, after the control folder's probe.
	generated := r.sum.Demo || r.liveDemo
	checkRunConfig := func() error {
		if r.dry {
			return nil
		}
		if err := checkSink(ctx, o.Sink, o.runConfig()); err != nil {
			return &ConfigError{Err: fmt.Errorf("--sink=%s: %w", o.Sink, err)}
		}
		return nil
	}
	if r.liveDemo && !r.dry {
		if err := o.startLiveSinkClean(); err != nil {
			return &ConfigError{Err: err}
		}
	}
	if generated {
		if err := checkRunConfig(); err != nil {
			return err
		}
	}
	o.warnMemory()
	if err := r.prepareSource(); err != nil {
		return &ConfigError{Err: err}
	}
	if r.signal, err = o.stopSignal(ctx, r.sum.Source, !r.dry); err != nil {
		return &ConfigError{Err: err}
	}
	r.fo.Stop = r.signal
	if !generated {
		if err := checkRunConfig(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return &ConfigError{Err: fmt.Errorf("interrupted before the job started: %w", err)}
	}
	return nil
}

// prepareSource settles what the job reads and with which settings: the
// live feed's folder or the demo's log (generated once), the pipeline and
// reader options, and the read-ahead account.
func (r *jobRun) prepareSource() error {
	o := r.o
	r.po = o.Pipeline.WithDefaults()
	switch {
	case r.liveDemo:
		r.sum.Source = o.LiveDir
		var err error
		if r.feed, err = o.liveFeed(r.po); err != nil {
			return err
		}
		if !r.dry {
			if err := prepareLiveDir(o.LiveDir, r.feed); err != nil {
				return err
			}
		}
	case r.sum.Demo:
		r.sum.Source = o.DemoDir
		if !r.dry {
			if _, err := ensureDemo(o.DemoDir); err != nil {
				return err
			}
		}
	}
	if !o.Streaming() && r.po.Triggers.Early > 0 {
		slog.Info("replay: EARLY firings off: a bounded replay has no EARLY rows (processing time says nothing about history)",
			"early", r.po.Triggers.Early)
		r.po.Triggers.Early = 0
	}
	r.sum.Settings = settings(r.po)
	r.fo = o.folderOptions(r.po)
	r.fo.Unlisted = r.dry && unlisted(r.sum.Source)
	// The read-ahead account lives in this process: prism has no
	// backpressure (flow.ReadAhead).
	if r.fo.ReadAheadRecords > 0 && !o.IsPubSub() {
		r.readAhead = "ra-" + flow.Token(8)
		r.fo.ReadAhead, r.po.ReadAhead = r.readAhead, r.readAhead
		key := r.readAhead
		r.onClose(func() { flow.ReleaseReadAhead(key) })
	}
	if r.sum.Demo && !r.fo.Unlisted {
		if err := sources.Validate(r.sum.Source, r.fo); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// absolutePaths makes the local paths of a run whose workers run in other
// processes absolute: a worker's working directory is not the launcher's.
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
// (ControlDir), with a token no other run has, so an old request never stops
// this run. A local folder is made absolute and created now, so that one the
// launcher cannot write is refused before any work; a streaming run, which
// ends only by a stop, also probes it with a write (a read-only bucket would
// otherwise show only at the stop). A replay may never need a stop, so it is
// not probed. With prepare false (a dry run) nothing is created or probed.
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
// listing it: a bucket (listing contacts the service) or a folder not there
// yet (the demo's log, generated at the first real run).
func unlisted(source string) bool {
	if !files.IsLocal(source) {
		return true
	}
	_, err := os.Stat(source)
	return err != nil
}
