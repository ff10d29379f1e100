package launch

import (
	"context"
	"io"
	"net"
	"os"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources"
)

// Run runs the job o describes, prints its summary to out and returns it. ctx ending is a graceful
// stop (SIGINT, SIGTERM): the readers stop unfinished, so no window is FINAL before its correction
// period, and the job is cancelled once the sink is quiet for o.QuietPeriod (at most o.StopTimeout).
// Errors before the job starts are *ConfigError (exit 2); a failed run, or one breaking
// conservation, returns an error with its summary (exit 1). With o.DryRun, Run writes the
// pipeline's proto and returns a nil summary.
func Run(ctx context.Context, o Options, out io.Writer) (*Summary, error) {
	r := &jobRun{o: o}
	defer r.close()
	if err := r.check(ctx); err != nil {
		return nil, &ConfigError{Err: err}
	}
	p, pb, err := r.buildJob(ctx)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if r.dry {
		if err := cli.WriteDryRun(o.DryRun, out, pb); err != nil {
			return nil, &ConfigError{Err: err}
		}
		return nil, nil
	}
	if err := r.startViews(ctx); err != nil {
		return nil, &ConfigError{Err: err}
	}
	res, planned := r.supervise(ctx, p, out)
	return r.summarise(ctx, res, planned, out)
}

// jobRun is one run of the job, filled in by its steps: check, buildJob, startViews and
// supervise, summarise (each in its file).
type jobRun struct {
	o        Options
	po       pipeline.Options
	fo       sources.FolderOptions
	sum      *Summary
	dry      bool
	liveDemo bool
	demo     *live.Demo
	signal   sources.StopSignal
	seal     *sealer
	// readAhead names the sources' read-ahead account ("": none).
	readAhead string
	mon       *live.Monitor
	// The listeners of --ui, --metrics-addr and --prism-ui-port, bound in check (nil: none).
	uiListener, metricsListener, prismUIListener net.Listener
	uiURL                                        string
	// beforeStop runs when ctx ends, before the readers stop.
	beforeStop func()
	cleanup    []func()
}

// onClose registers f to run when Run returns, after those registered later.
func (r *jobRun) onClose(f func()) { r.cleanup = append(r.cleanup, f) }

func (r *jobRun) close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
}

// keepPage says whether a run with --ui keeps its page up after the job until Ctrl-C.
var keepPage = func() bool { return isTerminal(os.Stdout) }

// ConfigError is a bad command line, setting, source or sink, found before any work: one line,
// exit 2 (SPEC §6).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return cli.OneLine(e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }
