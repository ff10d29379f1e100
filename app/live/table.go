package live

import (
	"fmt"
	"io"
	"strings"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/internal/slicesx"
)

// ANSI colours of the result states, as the HTML report colours them.
var stateColour = map[string]string{
	"EARLY":   "\x1b[90m", // grey
	"ON_TIME": "\x1b[34m", // blue
	"LATE":    "\x1b[33m", // orange-yellow
	"FINAL":   "\x1b[32m", // green
}

const reset = "\x1b[0m"

// WriteTable renders s as a compact table of windows, counters and partitions, colour by state.
func WriteTable(w io.Writer, s Snapshot, colour bool) error {
	paint := func(state, text string) string {
		if c, ok := stateColour[state]; ok && colour {
			return c + text + reset
		}
		return text
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s · %s · %s", s.Title, s.State, s.At)
	if s.Elapsed != "" {
		fmt.Fprintf(&b, " · %s", s.Elapsed)
	}
	b.WriteString("\n")
	settings := slicesx.Map(s.Settings, func(f report.Figure) string { return f.Name + " " + f.Value })
	b.WriteString(strings.Join(settings, " · ") + "\n\n")
	dw := len("dims")
	for _, win := range s.Windows {
		dw = max(dw, len(win.Dims))
	}
	fmt.Fprintf(&b, "%-17s  %-*s  %14s  %7s  %4s  %s\n", "window (UTC)", dw, "dims", "revenue", "events", "rev", "state")
	for _, win := range s.Windows {
		fmt.Fprintf(&b, "%-17s  %-*s  %14s  %7d  %4d  %s\n", clock(win.Start)+"–"+clock(win.End), dw, win.Dims,
			win.Revenue, win.Count, win.Revision, paint(win.State, win.State))
	}
	if len(s.Windows) == 0 {
		b.WriteString("(no rows yet)\n")
	}
	b.WriteString("\n")
	if s.Figures {
		mark := "✓"
		if !s.Conserved {
			mark = "(records in flight)"
		}
		fmt.Fprintf(&b, "%s %s\n", s.Identity, mark)
		rows := slicesx.Map(s.Rows, func(r metrics.Term) string { return paint(r.Name, fmt.Sprintf("%s %d", r.Name, r.Value)) })
		fmt.Fprintf(&b, "rows emitted: %s\n\n", strings.Join(rows, "  "))
		fmt.Fprintf(&b, "watermark (min over active partitions): %s\n", s.Watermark)
		for _, p := range s.Partitions {
			state := "active"
			if p.Idle {
				state = paint("LATE", "idle") // LATE's colour
			}
			fmt.Fprintf(&b, "  %-4s %-24s behind %-8s %-6s read %d\n", p.Name, p.Watermark, p.Behind, state, p.Read)
		}
	} else {
		b.WriteString("waiting for the job's first figures…\n")
	}
	if s.SinkError != "" {
		fmt.Fprintf(&b, "sink: %s\n", s.SinkError)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// clock is the time of day of an RFC 3339 instant.
func clock(ts string) string {
	if len(ts) >= 19 {
		return ts[11:19]
	}
	return ts
}

// Redraw redraws the terminal table of s. The whole screen is redrawn (cursor home, clear): log
// lines written meanwhile on stderr would break a redraw that moves up by its own height.
func Redraw(w io.Writer, s Snapshot) {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	WriteTable(&b, s, true)
	b.WriteString("\n(Ctrl-C stops gracefully and prints the summary)\n")
	io.WriteString(w, b.String())
}
