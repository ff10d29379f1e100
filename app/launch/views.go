package launch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// listen binds the ports of --ui, --metrics-addr and --prism-ui-port (check), so that a busy one
// is refused before any work: before the demo's log is generated or the sink is touched.
// startViews serves on them.
func (r *jobRun) listen() error {
	o := r.o
	bind := func(flag, addr string) (net.Listener, error) {
		l, err := live.Listen(flag, addr)
		if err != nil {
			return nil, err
		}
		r.onClose(func() { l.Close() }) // served, its server closed it first (an error, ignored)
		return l, nil
	}
	var err error
	if o.UI != "" {
		addr, _ := live.Addr("--ui", o.UI) // checked by Validate
		if r.uiListener, err = bind("--ui", addr); err != nil {
			return err
		}
	}
	if o.MetricsAddr != "" {
		addr, _ := live.Addr("--metrics-addr", o.MetricsAddr) // checked by Validate
		if r.metricsListener, err = bind("--metrics-addr", addr); err != nil {
			return err
		}
	}
	if o.PrismUIPort > 0 && !prismUIStarted(o.PrismUIPort) {
		if r.prismUIListener, err = bind(fmt.Sprintf("--prism-ui-port=%d", o.PrismUIPort), prismUIAddr(o.PrismUIPort)); err != nil {
			return err
		}
	}
	return nil
}

// startViews starts what watches the job besides the progress line: prism's web UI, the live
// views' monitor (a streaming run's table on a terminal), the page of --ui and /metrics, on the
// listeners bound by listen.
func (r *jobRun) startViews(ctx context.Context) error {
	o, sum := r.o, r.sum
	if o.PrismUIPort > 0 {
		if err := localrunner.EnsureJobService(ctx, o.Runner); err != nil {
			return err
		}
		if err := startPrismUI(o.PrismUIPort, r.prismUIListener); err != nil {
			return err
		}
	}
	if o.UI != "" || o.MetricsAddr != "" || (o.Streaming() && isTerminal(os.Stdout)) {
		r.mon = &live.Monitor{Title: "hourly revenue · " + sum.Source, Sink: o.Sink, SinkEvery: o.cadence().live,
			Triggers: r.po.Triggers, OutOfOrderBound: r.po.Watermark.OutOfOrderBound}
		if r.liveDemo {
			r.mon.Title = "hourly revenue · live demo"
		}
		for _, f := range settings(r.po) {
			if f.Value != "" && f.Value != "0s" {
				r.mon.Settings = append(r.mon.Settings, f)
			}
		}
		r.mon.Settings = append(r.mon.Settings, report.Figure{Name: "sink", Value: sum.Sink})
		r.onClose(func() { r.mon.Close() })
	}
	if r.uiListener != nil {
		srv := live.Serve(r.uiListener, r.mon)
		r.onClose(func() { srv.Close() })
		r.uiURL = srv.Addr()
		slog.Info("live page", "url", srv.URL(), "metrics", srv.URL()+"metrics")
	}
	if r.metricsListener != nil {
		srv := live.ServeMetrics(r.metricsListener, r.mon)
		r.onClose(func() { srv.Close() })
		slog.Info("metrics for Prometheus", "url", srv.URL()+"metrics")
	}
	return nil
}

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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// prismUI records the ports prism's web UI (--prism-ui-port) is served on: the in-process runner
// starts none, prism.CreateWebServer serves one over a job service client.
var prismUI = struct {
	mu      sync.Mutex
	started map[int]bool
}{started: map[int]bool{}}

func prismUIAddr(port int) string { return fmt.Sprintf("localhost:%d", port) }

// prismUIStarted reports whether this process serves prism's web UI on port already.
func prismUIStarted(port int) bool {
	prismUI.mu.Lock()
	defer prismUI.mu.Unlock()
	return prismUI.started[port]
}

// startPrismUI serves prism's web UI on localhost:port for the job service at *jobopts.Endpoint,
// once per port and process. held is the port's listener bound by listen, which refused a busy
// port before any work: prism's web server logs a failed listen and goes on, so the port is held
// until the server takes it.
func startPrismUI(port int, held net.Listener) error {
	prismUI.mu.Lock()
	defer prismUI.mu.Unlock()
	if prismUI.started[port] {
		return nil
	}
	addr := prismUIAddr(port)
	if held != nil {
		held.Close()
	}
	conn, err := grpc.NewClient(*jobopts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("--prism-ui-port: connect to the job service at %s: %w", *jobopts.Endpoint, err)
	}
	if err := prism.CreateWebServer(context.Background(), jobpb.NewJobServiceClient(conn), prism.Options{Port: port}); err != nil {
		conn.Close()
		return fmt.Errorf("--prism-ui-port=%d: %w", port, err)
	}
	// The server starts listening in the background: wait until it answers.
	url := "http://" + addr + "/"
	client := http.Client{Timeout: time.Second}
	var last error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			prismUI.started[port] = true
			slog.Info("prism web UI: jobs, their state and metrics", "url", url)
			return nil
		}
		last = err
	}
	return fmt.Errorf("--prism-ui-port=%d: the web UI did not come up: %w", port, last)
}
