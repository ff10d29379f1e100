package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/transforms"
)

// check is the run's set-up: the options validated, the ports of the live views bound, the sink's
// run_config checked, the demo's log generated, the source checked and the stop request's folder
// prepared; Run makes a failure a *ConfigError. A dry run contacts nothing.
func (r *jobRun) check(ctx context.Context) error {
	if err := r.o.validate(); err != nil {
		return err
	}
	o, err := r.o.absolutePaths()
	if err != nil {
		return err
	}
	r.liveDemo, r.dry = o.Demo == DemoLive, o.DryRun != ""
	o.Follow = o.Follow || r.liveDemo
	r.o = o
	r.sum = &Summary{Source: o.Source, Demo: o.Source == "", Follow: o.Streaming(), Archive: o.ArchiveDir(),
		Sink: o.Sink.String(), Runner: o.Runner, Started: time.Now()}
	// A bad sink is refused before a demo's log is generated (the control folder lies in it), for a
	// source the user gave after the control folder's probe.
	generated := r.sum.Demo || r.liveDemo
	checkRunConfig := func(now bool) error {
		if !now || r.dry {
			return nil
		}
		return checkSink(ctx, o.Sink, pipeline.RunConfig(o.Pipeline.Event, o.Pipeline.Triggers))
	}
	if !r.dry {
		if err := r.listen(); err != nil {
			return err
		}
		if r.liveDemo {
			if err := live.StartClean(o.Sink); err != nil {
				return err
			}
		}
	}
	if err := checkRunConfig(generated); err != nil {
		return err
	}
	if w := o.memoryWarning(transforms.WorkerMemory()); w != "" {
		slog.Warn(w)
	}
	if err := r.prepareSource(); err != nil {
		return err
	}
	if r.signal, err = o.stopSignal(ctx, r.sum.Source, !r.dry); err != nil {
		return err
	}
	r.fo.Stop = r.signal
	if err := checkRunConfig(!generated); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before the job started: %w", err)
	}
	return nil
}

// checkSink refuses settings that differ from the sink's rows' (SPEC §5 run_config).
func checkSink(ctx context.Context, spec sink.Spec, cfg map[string]string) error {
	s, err := sink.Open(ctx, spec)
	if err == nil {
		if c, ok := s.(sink.ConfigChecker); ok {
			err = c.CheckRunConfig(ctx, cfg)
		}
		err = errors.Join(err, s.Close())
	}
	if err != nil {
		return fmt.Errorf("--sink=%s: %w", spec, err)
	}
	return nil
}

// prepareSource settles what the job reads and with which settings: the live feed's folder or the
// demo's log, the pipeline and reader options, and the read-ahead account.
func (r *jobRun) prepareSource() error {
	o := r.o
	r.po = o.Pipeline.WithDefaults()
	switch {
	case r.liveDemo:
		r.sum.Source = live.DemoDir
		var err error
		if r.demo, err = live.NewDemo(live.DemoDir, r.po); err != nil {
			return err
		}
		if !r.dry {
			if err := r.demo.PrepareDir(); err != nil {
				return err
			}
		}
	case r.sum.Demo:
		r.sum.Source = o.DemoDir
		if !r.dry {
			if err := ensureDemo(o.DemoDir); err != nil {
				return err
			}
		}
	}
	if !o.Streaming() && r.po.Triggers.Early > 0 {
		slog.Info("replay: EARLY firings off: a bounded replay has no EARLY rows (processing time says nothing about history)",
			"early", r.po.Triggers.Early)
		r.po.Triggers.Early = 0
	}
	r.sum.Settings = map[string]string{}
	for _, f := range settings(r.po) {
		r.sum.Settings[f.Name] = f.Value
	}
	r.fo = o.folderOptions(r.po)
	r.fo.Unlisted = r.dry && unlisted(r.sum.Source)
	// The read-ahead account lives in this process: prism has no backpressure.
	if r.fo.ReadAheadRecords > 0 && !o.IsPubSub() {
		r.readAhead = "ra-" + flow.Token(8)
		r.fo.ReadAhead, r.po.ReadAhead = r.readAhead, r.readAhead
		r.onClose(func() { flow.ReleaseReadAhead(r.readAhead) })
	}
	if r.sum.Demo && !r.fo.Unlisted {
		if err := sources.Validate(r.sum.Source, r.fo); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// absolutePaths makes local paths absolute when workers run in other processes (other directories).
func (o Options) absolutePaths() (Options, error) {
	if o.inProcess() {
		return o, nil
	}
	abs := func(p *string) error {
		if *p == "" || !files.IsLocal(*p) {
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
	errs = append(errs, abs(&o.DemoDir), abs(&o.PubSub.ArchiveDir))
	return o, errors.Join(errs...)
}

// stopSignal is the run's stop request in ControlDir, with a token no other run has. With prepare
// (not a dry run) the folder is created now, so a bad one is refused before any work, and a
// streaming run, which ends only by a stop, probes it with a write.
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
	signal.Token = cmp.Or(o.RunToken, signal.Token)
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
			if ctx.Err() != nil { // Ctrl-C during the probe
				return signal, fmt.Errorf("interrupted before the job started: %w", ctx.Err())
			}
			return signal, fmt.Errorf("the graceful stop cannot write its request to %s: %w (pass --control=FOLDER the launcher can write, e.g. --control=gs://BUCKET/PATH)", dir, err)
		}
	}
	return signal, nil
}

// unlisted reports whether a dry run reads source without listing it: a bucket, or a folder not
// there yet (the demo's log).
func unlisted(source string) bool {
	if !files.IsLocal(source) {
		return true
	}
	_, err := os.Stat(source)
	return err != nil
}

// ensureDemo makes sure dir holds the demo raw log (gen.Demo), generating it
// the first time into a hidden sibling renamed into place, so an interrupted
// generation leaves no partial log. An existing dir is used as it is.
func ensureDemo(dir string) error {
	switch fi, err := os.Stat(dir); {
	case err == nil && fi.IsDir():
		slog.Info("demo: replaying the existing demo log (delete the folder to generate it again)", "dir", dir)
		return nil
	case err == nil:
		return fmt.Errorf("demo: %s exists and is not a folder", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("demo: %w", err)
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(cmp.Or(parent, "."), "."+base+".tmp-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(tmp)                      // a no-op after the rename
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		return fmt.Errorf("demo: %w", err)
	}
	stats, err := gen.Write(tmp, gen.Demo())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	slog.Info("demo: generated the demo raw log once; later runs replay it",
		"dir", dir, "lines", stats.Lines, "partitions", len(stats.Partitions), "files", stats.Files)
	return nil
}
