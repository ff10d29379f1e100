package live

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

	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// The live demo (launch --demo=live) writes a feed into DemoDir while the job follows it. DemoSink
// is apart from the replay demo's revenue.db, whose run_config (1h windows) refuses short windows.
const (
	DemoDir  = "demo-live"
	DemoSink = "sqlite:demo-live.db"
	// demoMarker marks a folder the demo made: only such a folder is emptied at its start.
	demoMarker = ".live-demo"
)

// demoDefaults are the live demo's settings where their flag is not given: a window goes
// EARLY → ON_TIME → LATE → FINAL in about five minutes.
var demoDefaults = []struct{ flag, value string }{
	{"window", "1m"},
	{"early", "5s"},
	{"allowed-lateness", "3m"},
	{"ooo-bound", "10s"},
	{"idle-timeout", "15s"},
	{"sink", DemoSink},
}

// SetDemoDefaults sets the live demo's settings on the flags the command line left alone, parsed
// as if typed.
func SetDemoDefaults(fs *cli.FlagSet) error {
	for _, d := range demoDefaults {
		if !fs.Given(d.flag) {
			if err := fs.Set(d.flag, d.value); err != nil {
				return fmt.Errorf("--demo=live: default --%s=%s: %w", d.flag, d.value, err)
			}
		}
	}
	return nil
}

// Demo is the live demo's feed for a job's settings.
type Demo struct {
	Dir  string
	Feed gen.LiveConfig
	po   pipeline.Options
}

// NewDemo is the feed writing dir for the job's settings po (with defaults), refused where they
// leave it no room (gen.LiveConfig.Validate).
func NewDemo(dir string, po pipeline.Options) (*Demo, error) {
	c := gen.Live(po.Triggers.Window, po.Triggers.AllowedLateness, po.Watermark.OutOfOrderBound, po.Watermark.IdleTimeout)
	c.MaxLine = po.Event.MaxLine
	return &Demo{Dir: dir, Feed: c, po: po}, c.Validate()
}

// StartClean removes the demo's own sink (DemoSink) with an earlier run's rows, so that the page
// and the summary show this run alone; a sink the user named is kept, and one line says so.
func StartClean(s sink.Spec) error {
	own, err := sink.ParseSpec(DemoSink)
	if err != nil {
		return err
	}
	if s.String() != own.String() {
		slog.Info("live demo: --sink is kept as it is: what it already holds stays beside this run's rows", "sink", s.String())
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
		slog.Info("live demo: starting clean: removed the sink of an earlier live demo", "sink", DemoSink)
	}
	return nil
}

// PrepareDir empties the demo's folder (only if the demo made it) and creates its partition
// folders, which the job lists when it starts.
func (d *Demo) PrepareDir() error {
	switch _, err := os.Stat(d.Dir); {
	case err == nil:
		if _, err := os.Stat(filepath.Join(d.Dir, demoMarker)); err != nil {
			return fmt.Errorf("--demo=live: %s exists and was not made by the live demo; move it away", d.Dir)
		}
		if err := os.RemoveAll(d.Dir); err != nil {
			return fmt.Errorf("--demo=live: empty %s: %w", d.Dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--demo=live: %w", err)
	}
	marker := []byte("written by launch --demo=live; emptied at its next start\n")
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return fmt.Errorf("--demo=live: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d.Dir, demoMarker), marker, 0o644); err != nil {
		return fmt.Errorf("--demo=live: %w", err)
	}
	for _, p := range gen.LivePartitions(d.Feed) {
		if err := os.MkdirAll(filepath.Join(d.Dir, p), 0o755); err != nil {
			return fmt.Errorf("--demo=live: %w", err)
		}
	}
	return nil
}

// Start prints the banner (the sink to, the page's address ui if served) and runs the feed. stop
// ends it at Ctrl-C or --duration, before the readers stop, so that the partitions turn idle and
// the last records reach their verdict; wait ends it too (the job ended by itself) and logs what
// it wrote.
func (d *Demo) Start(ctx context.Context, out io.Writer, to, ui string) (stop, wait func()) {
	d.banner(out, to, ui)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan gen.LiveStats, 1)
	go func() {
		st, err := gen.RunLive(ctx, d.Dir, d.Feed)
		if err != nil {
			slog.Error("live feed stopped", "err", err)
		}
		done <- st
	}()
	stopped := func() {
		cancel()
		slog.Info("live demo: feed stopped")
	}
	return stopped, func() {
		cancel()
		st := <-done
		slog.Info("live feed stopped", "lines", st.Lines, "files", st.Files, "events", st.Events, "duplicates", st.Duplicates,
			"conflicts", st.Conflicts, "late", st.Late, "backlog", st.Backlog, "too_late", st.TooLate,
			"malformed", st.Malformed, "idle_gaps", st.IdleGaps)
	}
}

// banner tells the user what the live demo does and with which settings.
func (d *Demo) banner(w io.Writer, to, ui string) {
	t, wm, c := d.po.Triggers, d.po.Watermark, d.Feed
	var b strings.Builder
	fmt.Fprintf(&b, "\nLive demo: %d partitions of purchases written into %s in real time, event times around now, read by a follower.\n", c.Partitions, d.Dir)
	fmt.Fprintf(&b, "  window %v · early %v · allowed-lateness %v · ooo-bound %v · idle-timeout %v   (change with --window, --early, ...)\n",
		t.Window, t.Early, t.AllowedLateness, wm.OutOfOrderBound, wm.IdleTimeout)
	late := c.LateDelay()
	fmt.Fprintf(&b, "  traffic: ~%.0f ev/s, disorder up to %v, identical and conflicting retries, an offline device uploading %v–%v late,\n",
		c.Rate*float64(c.Partitions), wm.OutOfOrderBound/2, late[0], late[1])
	fmt.Fprintf(&b, "           p%d silent for %v every %v (idle, then its backlog), uploads past the correction period, a few malformed lines\n",
		c.Partitions-1, c.Gap(), c.Cycle())
	fmt.Fprintf(&b, "  watch: EARLY every %v while a window is open, ON_TIME once the watermark passes its end, LATE corrections,\n", t.Early)
	fmt.Fprintf(&b, "         FINAL %v after its end (plus the bound)\n", t.AllowedLateness)
	fmt.Fprintf(&b, "  sink %s", to)
	if ui != "" {
		fmt.Fprintf(&b, " · live page http://%s/", ui)
	}
	b.WriteString(" · stop with Ctrl-C (or --duration): the summary follows\n\n")
	io.WriteString(w, b.String())
}
