package launch

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
)

// DefaultProgressEvery is how often a running job reports progress.
const DefaultProgressEvery = 2 * time.Second

// progress reports a run's figures: one line rewritten in place on a terminal, else a log line.
type progress struct {
	w        io.Writer
	terminal bool
	started  time.Time
	last     time.Time
	lastRead int64
	wrote    bool
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, started: time.Now(), last: time.Now(), terminal: isTerminal(w)}
}

// report shows the figures so far, stalled Pub/Sub reader keys, and the read-ahead against its
// budget (ra nil: none).
func (p *progress) report(c metrics.Counts, parts []live.Partition, ra *flow.ReadAhead, budget int) {
	now := time.Now()
	rate := float64(c.Read-p.lastRead) / now.Sub(p.last).Seconds()
	p.last, p.lastRead = now, c.Read
	rows := c.Rows["EARLY"] + c.Rows["ON_TIME"] + c.Rows["LATE"] + c.Rows["FINAL"]
	pending := sources.PendingTails() // last lines without a newline (--settle)
	held, retried := c.Counters[pubsub.MetricHeldExtended], c.Counters[pubsub.MetricArchiveRetries]
	var stalled []string
	for _, part := range parts {
		if part.StalledMs > 0 {
			stalled = append(stalled, fmt.Sprintf("%s %s", part.Name, (time.Duration(part.StalledMs)*time.Millisecond).Round(time.Second)))
		}
	}
	if p.terminal {
		line := fmt.Sprintf("%s  read %d (%.0f ev/s)  counted %d  dup %d  conflicts %d  quarantined %d  too_late %d  rows %d (FINAL %d)",
			now.Sub(p.started).Round(time.Second), c.Read, rate, c.Counted, c.Duplicates, c.Conflicts, c.Quarantined, c.TooLate, rows, c.Rows["FINAL"])
		if ra != nil {
			line += fmt.Sprintf("  ahead %d/%d", ra.Ahead(), budget)
		}
		if held > 0 || retried > 0 {
			line += fmt.Sprintf("  held %d  retried %d", held, retried)
		}
		if pending > 0 {
			line += fmt.Sprintf("  pending %d unterminated last line(s)", pending)
		}
		if len(stalled) > 0 {
			line += "  STALLED " + strings.Join(stalled, ", ")
		}
		fmt.Fprintf(p.w, "\r%-100s", line)
		p.wrote = true
		return
	}
	attrs := []any{"elapsed", now.Sub(p.started).Round(time.Second), "read", c.Read, "events_per_s", int64(rate),
		"counted", c.Counted, "duplicates", c.Duplicates, "conflicts", c.Conflicts, "quarantined", c.Quarantined,
		"too_late", c.TooLate, "rows", rows, "final_rows", c.Rows["FINAL"], "pending_unterminated_lines", pending,
		"pubsub_held", held, "pubsub_archive_retries", retried, "read_ahead", ra.Ahead(), "read_ahead_budget", budget}
	if len(stalled) > 0 {
		attrs = append(attrs, "pubsub_stalled", strings.Join(stalled, ", "))
	}
	slog.Info("progress", attrs...)
}

// done ends the updating line so the summary starts on its own line.
func (p *progress) done() {
	if p.terminal && p.wrote {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
