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
	"github.com/revenue-stream/hourly/sinks/internal/table"
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

// New returns a console sink printing to w (os.Stdout when nil).
func New(w io.Writer) *Console {
	if w == nil {
		w = os.Stdout
	}
	return &Console{w: w, guard: rules.NewGuard()}
}

var consoleColumns = []string{"window_start", "window_end", "dims", "revenue", "event_count", "revision", "result_state"}

const auditSample = 5

// Write prints the batch. Batch numbers start at 0, like Spark's.
func (c *Console) Write(ctx context.Context, b sink.Batch) (sink.Result, error) {
	if err := ctx.Err(); err != nil {
		return sink.Result{}, fmt.Errorf("console sink: %w", err)
	}
	if err := b.Validate(); err != nil {
		return sink.Result{}, fmt.Errorf("console sink: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.guard.Stage()
	accepted := st.AdmitRows(b.Rows)

	var buf bytes.Buffer
	const rule = "-------------------------------------------\n"
	fmt.Fprintf(&buf, "%sBatch: %d\n%s", rule, c.batch, rule)
	writeTable(&buf, consoleColumns, slicesx.Map(accepted, func(r model.Row) []string {
		return []string{model.FormatTime(r.WindowStart), model.FormatTime(r.WindowEnd), r.Dims,
			model.FormatMicros(r.RevenueMicros), strconv.FormatInt(r.EventCount, 10),
			strconv.FormatInt(r.Revision, 10), r.State.String()}
	}))
	if st.Refused.Stale > 0 {
		fmt.Fprintf(&buf, "stale: %d (rows at or below a revision already shown, or moving a window back)\n", st.Refused.Stale)
	}

	res := sink.Result{Accepted: len(accepted), Stale: st.Refused.Stale}
	res.AuditInserted += summarize(&buf, st, "too_late", table.TooLateCodec, b.TooLate, func(t model.TooLate) string {
		return fmt.Sprintf("%s @ %s from %s", t.EventID, model.FormatTime(t.EventTime), t.Position)
	})
	res.AuditInserted += summarize(&buf, st, "conflicts", table.ConflictCodec, b.Conflicts, func(cf model.Conflict) string {
		return fmt.Sprintf("%s from %s: fingerprint %s, first counted %s", cf.EventID, cf.Position,
			model.FingerprintHex(cf.ConflictingFingerprint), model.FingerprintHex(cf.FirstFingerprint))
	})
	res.AuditInserted += summarize(&buf, st, "quarantined", table.QuarantinedCodec, b.Quarantined, func(q model.Quarantined) string {
		return q.Reason + " at " + q.Position
	})
	buf.WriteByte('\n')

	if _, err := c.w.Write(buf.Bytes()); err != nil {
		return sink.Result{}, fmt.Errorf("console sink: batch %d: %w", c.batch, err)
	}
	st.Commit()
	c.batch++
	st.Refused.Warn("console sink")
	return res, nil
}

// summarize prints "name: N (a, b, ... and K more)" of the records whose
// position is new to c's table, when there are any, and counts them.
func summarize[T any](buf *bytes.Buffer, st *rules.Stage, name string, c table.Codec[T], recs []T, item func(T) string) int {
	var items []string
	for _, v := range recs {
		if st.NewAudit(c.Table.Name, c.Position(v)) {
			items = append(items, item(v))
		}
	}
	if len(items) == 0 {
		return 0
	}
	shown, more := items, ""
	if len(items) > auditSample {
		shown, more = items[:auditSample], fmt.Sprintf(", ... and %d more", len(items)-auditSample)
	}
	fmt.Fprintf(buf, "%s: %d (%s%s)\n", name, len(items), strings.Join(shown, ", "), more)
	return len(items)
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
