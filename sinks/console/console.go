package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/internal/rules"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// Console is the --sink=console debugging sink: a table per batch laid out
// like Spark's console sink, then audit summaries. It applies the revision
// rules in memory, so it shows what a real sink would accept.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	batch int
	guard *rules.Guard
}

var _ sink.Sink = (*Console)(nil)

func init() {
	sink.Register(sink.SchemeConsole, sink.Backend{Open: func(context.Context, sink.Spec) (sink.Sink, error) { return New(os.Stdout), nil }})
}

// New returns a console sink printing to w.
func New(w io.Writer) *Console { return &Console{w: w, guard: rules.NewGuard()} }

var consoleColumns = []string{"window_start", "window_end", "dims", "revenue", "event_count", "revision", "result_state"}

const auditSample = 5

// Write prints the batch (rules.Guard.Write). Batch numbers start at 0, like
// Spark's.
func (c *Console) Write(ctx context.Context, b sink.Batch) (sink.Result, error) {
	res, err := c.guard.Write(ctx, &c.mu, b, c.print, "console sink")
	if err != nil {
		return res, fmt.Errorf("console sink: %w", err)
	}
	return res, nil
}

func (c *Console) print(b sink.Batch, stale int) error {
	var buf bytes.Buffer
	const rule = "-------------------------------------------\n"
	fmt.Fprintf(&buf, "%sBatch: %d\n%s", rule, c.batch, rule)
	writeTable(&buf, consoleColumns, slicesx.Map(b.Rows, func(r model.Row) []string {
		return []string{model.FormatTime(r.WindowStart), model.FormatTime(r.WindowEnd), r.Dims,
			model.FormatMicros(r.RevenueMicros), strconv.FormatInt(r.EventCount, 10),
			strconv.FormatInt(r.Revision, 10), r.State.String()}
	}))
	if stale > 0 {
		fmt.Fprintf(&buf, "stale: %d (rows at or below a revision already shown, or moving a window back)\n", stale)
	}
	summarize(&buf, "too_late", b.TooLate, func(t model.TooLate) string {
		return fmt.Sprintf("%s @ %s from %s", t.EventID, model.FormatTime(t.EventTime), t.Position)
	})
	summarize(&buf, "conflicts", b.Conflicts, func(cf model.Conflict) string {
		return fmt.Sprintf("%s from %s: fingerprint %s, first counted %s", cf.EventID, cf.Position,
			model.FingerprintHex(cf.ConflictingFingerprint), model.FingerprintHex(cf.FirstFingerprint))
	})
	summarize(&buf, "quarantined", b.Quarantined, func(q model.Quarantined) string {
		return q.Reason + " at " + q.Position
	})
	buf.WriteByte('\n')

	if _, err := c.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("batch %d: %w", c.batch, err)
	}
	c.batch++
	return nil
}

// summarize prints "name: N (a, b, ... and K more)" of recs, when there are
// any.
func summarize[T any](buf *bytes.Buffer, name string, recs []T, item func(T) string) {
	if len(recs) == 0 {
		return
	}
	shown, more := recs, ""
	if len(recs) > auditSample {
		shown, more = recs[:auditSample], fmt.Sprintf(", ... and %d more", len(recs)-auditSample)
	}
	fmt.Fprintf(buf, "%s: %d (%s%s)\n", name, len(recs), strings.Join(slicesx.Map(shown, item), ", "), more)
}

// writeTable renders a bordered table, right-aligned as Spark's show does.
func writeTable(buf *bytes.Buffer, header []string, rows [][]string) {
	width := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	border := func() {
		for _, w := range width {
			buf.WriteByte('+')
			buf.WriteString(strings.Repeat("-", w))
		}
		buf.WriteString("+\n")
	}
	line := func(cells []string) {
		for i, cell := range cells {
			buf.WriteByte('|')
			buf.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell)))
			buf.WriteString(cell)
		}
		buf.WriteString("|\n")
	}
	border()
	line(header)
	border()
	for _, r := range rows {
		line(r)
	}
	border()
}

// Close does nothing: the writer belongs to the caller.
func (c *Console) Close() error { return nil }
