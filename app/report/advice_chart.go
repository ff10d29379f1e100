package report

import (
	"strconv"
	"strings"
)

// tradeOffChart is share late and too late against the bounds tried, evenly spaced.
type tradeOffChart struct {
	frame
	XTicks, YTicks []tick
	// Late, LateRevenue and TooLate are polylines' points attributes.
	Late, LateRevenue, TooLate string
	Points                     []tradeOffDot
}

type tradeOffDot struct {
	X, Y  string
	Title string
	Class string // "cur", "rec" or ""
}

func newTradeOffChart(pts []TradeOffPoint) *tradeOffChart {
	if len(pts) == 0 {
		return nil
	}
	c := &tradeOffChart{frame: frame{Width: 1120, Height: 280, Left: 70, Top: 20, Right: 1100, Bottom: 236}}
	top := 0.0
	for _, p := range pts {
		top = max(top, p.LateEvents, p.LateRevenue, p.TooLateEvents)
	}
	// A round top: 1, 2 or 5 times a power of ten percent.
	scale := 1.0
	if top > 0 {
		scale = niceStep(top, 1)
	}
	y := func(v float64) float64 { return c.Bottom - c.PlotH()*v/scale }
	slot := c.PlotW() / float64(len(pts))
	x := func(i int) float64 { return c.Left + slot*(float64(i)+0.5) }
	for k := 0; k <= 4; k++ {
		v := scale * float64(k) / 4
		c.YTicks = append(c.YTicks, tick{num(y(v)), strconv.FormatFloat(v, 'f', -1, 64) + "%"})
	}
	var late, rev, too []string
	for i, p := range pts {
		c.XTicks = append(c.XTicks, tick{num(x(i)), p.Bound})
		d := tradeOffDot{X: num(x(i)), Y: num(y(p.LateEvents)),
			Title: "--ooo-bound=" + p.Bound + ": late " + pct(p.LateEvents) + " of events, " + pct(p.LateRevenue) + " of revenue; too late " + pct(p.TooLateEvents)}
		switch {
		case p.Recommended:
			d.Class = "rec"
			d.Title += " (recommended)"
		case p.Current:
			d.Class = "cur"
			d.Title += " (current)"
		}
		c.Points = append(c.Points, d)
		late = append(late, d.X+","+d.Y)
		rev = append(rev, d.X+","+num(y(p.LateRevenue)))
		too = append(too, d.X+","+num(y(p.TooLateEvents)))
	}
	c.Late, c.LateRevenue, c.TooLate = strings.Join(late, " "), strings.Join(rev, " "), strings.Join(too, " ")
	return c
}

func pct(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "%" }
