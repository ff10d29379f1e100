package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Advice is what cmd/advise found, laid out once (advise.NewReport) and rendered here as text,
// Markdown, HTML and JSON, so the forms never disagree.
type Advice struct {
	Title    string          `json:"title"`
	Sections []AdviceSection `json:"sections"`
	// TradeOff is the bound's trade-off (share late against the bound), charted in HTML.
	TradeOff []TradeOffPoint `json:"trade_off"`
	// Figures are the advisor's figures for machines (advise.Figures).
	Figures any `json:"figures"`
}

// AdviceSection is one setting's part of the advice: lines, then tables.
type AdviceSection struct {
	Title  string   `json:"title"`
	Lines  []string `json:"lines,omitempty"`
	Tables []Table  `json:"tables,omitempty"`
	// Command, when set, is the recommended flags, shown as code.
	Command string `json:"command,omitempty"`
	// TradeOff asks the HTML form to draw Advice.TradeOff after the tables.
	TradeOff bool `json:"-"`
}

// Table is a titled table of display strings; Current is the current setting's row (-1: none).
type Table struct {
	Caption string     `json:"caption,omitempty"`
	Head    []string   `json:"head"`
	Rows    [][]string `json:"rows"`
	Current int        `json:"current_row"`
	// Note follows the table.
	Note string `json:"note,omitempty"`
}

// TradeOffPoint is one bound tried: the shares (percent) late by events and revenue, and too late.
type TradeOffPoint struct {
	Bound         string  `json:"bound"`
	BoundMs       int64   `json:"bound_ms"`
	LateEvents    float64 `json:"late_events_pct"`
	LateRevenue   float64 `json:"late_revenue_pct"`
	TooLateEvents float64 `json:"too_late_events_pct"`
	Current       bool    `json:"current"`
	Recommended   bool    `json:"recommended"`
}

// WriteText renders the advice as aligned plain-text tables: the command's summary.
func (a Advice) WriteText(w io.Writer) error {
	var b strings.Builder
	for i, s := range a.Sections {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.Title + "\n")
		for _, l := range s.Lines {
			b.WriteString("  " + l + "\n")
		}
		for _, t := range s.Tables {
			if t.Caption != "" {
				b.WriteString("  " + t.Caption + "\n")
			}
			t.WriteText(&b)
			if t.Note != "" {
				b.WriteString("  " + t.Note + "\n")
			}
		}
		if s.Command != "" {
			b.WriteString("  " + s.Command + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// NewTable is a table without a current row.
func NewTable(caption string, head ...string) Table {
	return Table{Caption: caption, Head: head, Current: -1}
}

// WriteText writes the head and rows in columns two spaces apart, indented by two, the current row
// starred: the text form of every command's tables.
func (t Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(t.Head, "\t"))
	for k, r := range t.Rows {
		cells := strings.Join(r, "\t")
		if k == t.Current {
			cells = strings.Replace(cells, "\t", " *\t", 1)
		}
		fmt.Fprintln(tw, "  "+cells)
	}
	return tw.Flush()
}
