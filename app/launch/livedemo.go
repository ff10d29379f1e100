package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/pipeline"
)

// The demos --demo selects: a replay of a generated history (the default
// when there is no --source) or a live feed written while the job follows it.
const (
	DemoReplay = "replay"
	DemoLive   = "live"
	// DefaultLiveDir is the folder the live feed writes; DefaultLiveSink is
	// the live demo's sink, apart from the replay demo's revenue.db, whose
	// run_config (1h windows) would refuse the live demo's short windows.
	DefaultLiveDir  = "demo-live"
	DefaultLiveSink = "sqlite:demo-live.db"
	// liveMarker marks a folder the live demo owns, so that only such a
	// folder is emptied at its start.
	liveMarker = ".live-demo"
)

// liveDefaults are --demo=live's settings where their flag is not given: a
// window goes EARLY → ON_TIME → LATE → FINAL in about five minutes.
var liveDefaults = []struct{ flag, value string }{
	{"window", "1m"},
	{"early", "5s"},
	{"allowed-lateness", "3m"},
	{"ooo-bound", "10s"},
	{"idle-timeout", "15s"},
	{"sink", DefaultLiveSink},
}

// applyLiveDefaults sets the live demo's settings on the flags the command
// line left alone, parsed as if typed.
func applyLiveDefaults(fs *cli.FlagSet) error {
	for _, d := range liveDefaults {
		if !fs.Given(d.flag) {
			if err := fs.Set(d.flag, d.value); err != nil {
				return fmt.Errorf("--demo=live: default --%s=%s: %w", d.flag, d.value, err)
			}
		}
	}
	return nil
}

// validateDemo checks --demo, --duration, --ui and --metrics-addr against
// the rest.
func (o Options) validateDemo() error {
	switch o.Demo {
	case "", DemoReplay:
		if o.Demo == DemoReplay && o.Source != "" {
			return usagef("--demo=replay replays the generated demo log: it takes no --source")
		}
	case DemoLive:
		if o.Source != "" {
			return usagef("--demo=live writes its own source folder (./%s): it takes no --source", o.LiveDir)
		}
		if _, err := o.liveFeed(o.Pipeline.WithDefaults()); err != nil {
			return usagef("--demo=live: %v", err)
		}
	default:
		return usagef("--demo: %q: want %s or %s", o.Demo, DemoReplay, DemoLive)
	}
	if o.Duration < 0 {
		return usagef("--duration must not be negative, got %v", o.Duration)
	}
	if o.Duration > 0 && !o.Streaming() && o.Demo != DemoLive {
		return usagef("--duration stops a streaming run (--follow, Pub/Sub or --demo=live); a replay ends by itself")
	}
	if o.UI != "" {
		if _, err := uiAddr(o.UI); err != nil {
			return &ConfigError{Err: err}
		}
	}
	if o.MetricsAddr != "" {
		if _, err := metricsAddr(o.MetricsAddr); err != nil {
			return &ConfigError{Err: err}
		}
	}
	return nil
}

// liveFeed is the live demo's feed for the job's settings.
func (o Options) liveFeed(po pipeline.Options) (gen.LiveConfig, error) {
	c := gen.Live(po.Triggers.Window, po.Triggers.AllowedLateness, po.Watermark.OutOfOrderBound, po.Watermark.IdleTimeout)
	c.MaxLine = po.Event.MaxLine
	return c, c.Validate()
}

// prepareLiveDir empties the live demo's folder (only if the demo made it)
// and creates its partition folders, which the job lists when it starts.
func prepareLiveDir(dir string, c gen.LiveConfig) error {
	switch _, err := os.Stat(dir); {
	case err == nil:
		if _, err := os.Stat(filepath.Join(dir, liveMarker)); err != nil {
			return fmt.Errorf("--demo=live: %s exists and was not made by the live demo; move it away", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("--demo=live: empty %s: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--demo=live: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--demo=live: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, liveMarker), []byte("written by launch --demo=live; emptied at its next start\n"), 0o644); err != nil {
		return fmt.Errorf("--demo=live: %w", err)
	}
	for _, p := range gen.LivePartitions(c) {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return fmt.Errorf("--demo=live: %w", err)
		}
	}
	return nil
}

// startLiveSinkClean removes the live demo's own sink (DefaultLiveSink) with
// an earlier run's rows, so that the page and the summary show this run
// alone; a sink the user named is kept, and one line says so.
func (o Options) startLiveSinkClean() error {
	own, err := sink.ParseSpec(DefaultLiveSink)
	if err != nil {
		return err
	}
	if o.Sink.String() != own.String() {
		slog.Info("live demo: --sink is kept as it is: what it already holds stays beside this run's rows", "sink", o.Sink.String())
		return nil
	}
	removed := false
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		switch err := os.Remove(own.Path + suffix); {
		case err == nil:
			removed = true
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("--demo=live: start clean: %w", err)
		}
	}
	if removed {
		slog.Info("live demo: starting clean: removed the sink of an earlier live demo", "sink", DefaultLiveSink)
	}
	return nil
}

// startLiveFeed runs the feed until ctx ends; wait returns what it wrote.
func startLiveFeed(ctx context.Context, dir string, c gen.LiveConfig) (wait func() gen.LiveStats) {
	done := make(chan gen.LiveStats, 1)
	go func() {
		st, err := gen.RunLive(ctx, dir, c)
		if err != nil {
			slog.Error("live feed stopped", "err", err)
		}
		done <- st
	}()
	return func() gen.LiveStats { return <-done }
}

// liveBanner tells the user what the live demo does and with which
// settings.
func liveBanner(w io.Writer, dir, sink, ui string, po pipeline.Options, c gen.LiveConfig) {
	t := po.Triggers
	var b strings.Builder
	fmt.Fprintf(&b, "\nLive demo: %d partitions of purchases written into %s in real time, event times around now, read by a follower.\n", c.Partitions, dir)
	fmt.Fprintf(&b, "  window %v · early %v · allowed-lateness %v · ooo-bound %v · idle-timeout %v   (change with --window, --early, ...)\n",
		t.Window, t.Early, t.AllowedLateness, po.Watermark.OutOfOrderBound, po.Watermark.IdleTimeout)
	late := c.LateDelay()
	fmt.Fprintf(&b, "  traffic: ~%.0f ev/s, disorder up to %v, identical and conflicting retries, an offline device uploading %v–%v late,\n",
		c.Rate*float64(c.Partitions), po.Watermark.OutOfOrderBound/2, late[0], late[1])
	fmt.Fprintf(&b, "           p%d silent for %v every %v (idle, then its backlog), uploads past the correction period, a few malformed lines\n",
		c.Partitions-1, c.Gap(), c.Cycle())
	fmt.Fprintf(&b, "  watch: EARLY every %v while a window is open, ON_TIME once the watermark passes its end, LATE corrections,\n", t.Early)
	fmt.Fprintf(&b, "         FINAL %v after its end (plus the bound)\n", t.AllowedLateness)
	fmt.Fprintf(&b, "  sink %s", sink)
	if ui != "" {
		fmt.Fprintf(&b, " · live page http://%s/", ui)
	}
	b.WriteString(" · stop with Ctrl-C (or --duration): the summary follows\n\n")
	io.WriteString(w, b.String())
}

// drainFeed waits, once the feed has stopped, until every record read has
// its verdict. Prism hands dedup only elements its input watermark has
// passed, so stopping the readers at once would freeze the watermark and
// strand the last records; with the feed stopped, the partitions turn idle
// and their watermarks advance with processing time.
func drainFeed(po pipeline.Options, drained func() bool) {
	slog.Info("live demo: feed stopped")
	drainInFlight(po, drained)
}

// drainInFlight waits, before a graceful stop stops the readers, until every
// record read has its verdict (the partitions turn idle, their watermark moves
// on), at most the idle timeout + the bound + 10 s.
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
