package report

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/model"
)

// Charts are geometry (strings) rendered by the HTML template, so every label from the data is
// escaped by html/template; colours live in the style sheet.

// frame is a chart's canvas, plot area and ticks, in SVG user units.
type frame struct {
	Width, Height            float64
	Left, Top, Right, Bottom float64 // plot area edges
	XTicks, YTicks           []tick
}

func (f frame) PlotW() float64 { return f.Right - f.Left }
func (f frame) PlotH() float64 { return f.Bottom - f.Top }

// One decimal: sub-pixel precision is invisible.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

type tick struct {
	Pos   string // x or y of the tick
	Label string
}

type dot struct{ X, Y string }

// traceChart is one partition's event times (dots) and watermark (line) over the record index.
type traceChart struct {
	frame
	Dots, Behind []dot
	// Drawn is len(Dots) + len(Behind).
	Drawn int
	// Line is the watermark polyline's points attribute.
	Line string
}

func newTraceChart(tr PartitionTrace) *traceChart {
	c := &traceChart{frame: frame{Width: 560, Height: 236, Left: 92, Top: 26, Right: 548, Bottom: 202}}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, p := range tr.Points {
		lo, hi = min(lo, p.EventTime), max(hi, p.EventTime)
		if p.Watermark != model.NoWatermark {
			lo, hi = min(lo, p.Watermark), max(hi, p.Watermark)
		}
	}
	if hi == lo {
		lo, hi = lo-time.Minute.Milliseconds(), hi+time.Minute.Milliseconds()
	}
	pad := (hi - lo) / 25
	lo, hi = lo-pad, hi+pad
	records := max(tr.Read, 1)
	x := func(rec int) float64 { return c.Left + c.PlotW()*float64(rec)/float64(records) }
	y := func(ms int64) float64 { return c.Bottom - c.PlotH()*float64(ms-lo)/float64(hi-lo) }

	// At most six ticks from 0 to records, the step a whole number.
	for _, v := range multiples(0, int64(records), int64(max(1, niceStep(float64(records+1), 6)))) {
		c.XTicks = append(c.XTicks, tick{num(x(int(v))), Count(v)})
	}
	c.YTicks = timeTicks(lo, hi, 5, func(ms int64) string { return num(y(ms)) })

	var line []string
	for _, p := range tr.Points {
		d := dot{num(x(p.Record)), num(y(p.EventTime))}
		if p.Behind() {
			c.Behind = append(c.Behind, d)
		} else {
			c.Dots = append(c.Dots, d)
		}
		if p.Watermark != model.NoWatermark {
			line = append(line, num(x(p.Record))+","+num(y(p.Watermark)))
		}
	}
	// The watermark holds after the last record: extend it to the edge.
	if tr.Watermark != model.NoWatermark && len(line) > 0 {
		line = append(line, num(x(records))+","+num(y(tr.Watermark)))
	}
	c.Line = strings.Join(line, " ")
	c.Drawn = len(c.Dots) + len(c.Behind)
	return c
}

// niceStep is the least of 1, 2 or 5 times a power of ten that cuts span into at most n steps: the
// step of every numeric axis. Below 1 it divides, so that a step is the double nearest its decimal.
func niceStep(span, n float64) float64 {
	e := int(math.Floor(math.Log10(span / n)))
	var step float64
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * math.Pow10(e)
		if e < 0 {
			step = m / math.Pow10(-e)
		}
		if span/step <= n {
			break
		}
	}
	return step
}

// multiples lists the multiples of step in [lo, hi]: an axis's ticks.
func multiples(lo, hi, step int64) []int64 {
	var out []int64
	for v := lo / step * step; v <= hi; v += step { // from the multiple toward zero
		if v >= lo {
			out = append(out, v)
		}
	}
	return out
}

// timeSteps are the tick spacings an event-time axis may use.
var timeSteps = []time.Duration{
	time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour,
	365 * 24 * time.Hour,
}

// timeTicks places about n ticks on UTC-aligned round instants in [lo, hi].
func timeTicks(lo, hi int64, n int, pos func(int64) string) []tick {
	step := timeSteps[len(timeSteps)-1].Milliseconds()
	for _, s := range timeSteps {
		if (hi-lo)/s.Milliseconds() <= int64(n) {
			step = s.Milliseconds()
			break
		}
	}
	layout := "Jan 02 15:04"
	switch {
	case step >= 24*time.Hour.Milliseconds():
		layout = "2006-01-02"
	case step < time.Minute.Milliseconds():
		layout = "Jan 02 15:04:05"
	}
	var out []tick
	for _, t := range multiples(lo, hi, step) {
		out = append(out, tick{pos(t), time.UnixMilli(t).UTC().Format(layout)})
	}
	return out
}

// histChart is the delay histogram on a log count axis, so rare long delays stay visible.
type histChart struct {
	frame
	Bars    []bar
	Markers []marker
}

type bar struct {
	X, Y, W, H  string
	CX, LabelY  string // centre and the count label's baseline
	Name, Count string
	Share       string
}

type marker struct {
	X, Top, Bottom string
	LabelY, Label  string
	// Anchor and DX put the label left of a line near the right edge.
	Anchor, DX string
}

func newHistChart(h delay.Histogram) *histChart {
	c := &histChart{frame: frame{Width: 1120, Height: 300, Left: 110, Top: 70, Right: 1104, Bottom: 262}}
	top := max(1, slices.Max(h.Counts())) // h has buckets: it has delays
	decades := math.Ceil(math.Log10(float64(top + 1)))
	y := func(v int64) float64 { return c.Bottom - c.PlotH()*math.Log10(float64(v+1))/decades }
	for p := int64(1); float64(p) <= math.Pow(10, decades); p *= 10 {
		c.YTicks = append(c.YTicks, tick{num(y(p)), Count(p)})
	}
	total := h.Total
	slot := c.PlotW() / float64(max(len(h.Buckets), 1))
	for i, b := range h.Buckets {
		x0 := c.Left + slot*float64(i)
		top := y(b.Count)
		c.Bars = append(c.Bars, bar{
			X: num(x0 + slot*0.12), W: num(slot * 0.76),
			Y: num(top), H: num(c.Bottom - top),
			CX: num(x0 + slot/2), LabelY: num(top - 6),
			Name: b.Label, Count: Count(b.Count), Share: share(b.Count, total),
		})
		if b.Count == 0 {
			c.Bars[len(c.Bars)-1].Share = "" // "0", not "0 · 0.0%"
		}
	}
	if total == 0 {
		return c
	}
	// Each percentile sits linearly within its bucket, its label on its own row.
	for row, p := range []struct {
		name string
		v    int64
	}{{"p50", h.P50}, {"p95", h.P95}, {"p99", h.P99}} {
		x := c.Left
		lower := int64(0)
		for i, b := range h.Buckets {
			if p.v < b.Upper || i == len(h.Buckets)-1 {
				frac := 0.5
				if b.Upper != delay.Unbounded {
					frac = float64(p.v-lower) / float64(b.Upper-lower)
				}
				x = c.Left + slot*(float64(i)+0.12+0.76*frac)
				break
			}
			lower = b.Upper
		}
		labelY := c.Top - 50 + float64(row)*17
		m := marker{
			X: num(x), Top: num(labelY + 4), Bottom: num(c.Bottom),
			LabelY: num(labelY), Label: p.name + " " + Delay(p.v),
			Anchor: "start", DX: "4",
		}
		if x > c.Right-120 {
			m.Anchor, m.DX = "end", "-4"
		}
		c.Markers = append(c.Markers, m)
	}
	return c
}

// revenueChart shows each shown window's latest revenue, coloured by state.
type revenueChart struct {
	frame
	Bars []revenueBar
	Zero string
}

type revenueBar struct {
	X, Y, W, H string
	Class      string
	Title      string
}

func newRevenueChart(ws []Window) *revenueChart {
	if len(ws) == 0 {
		return nil
	}
	c := &revenueChart{frame: frame{Width: 1120, Height: 210, Left: 110, Top: 26, Right: 1104, Bottom: 182}}
	var lo, hi int64
	for _, w := range ws {
		lo, hi = min(lo, w.RevenueMicros), max(hi, w.RevenueMicros)
	}
	if hi == lo {
		hi = lo + 1_000_000
	}
	y := func(v int64) float64 { return c.Bottom - c.PlotH()*float64(v-lo)/float64(hi-lo) }
	// About four ticks, a whole amount apart.
	for _, v := range multiples(lo, hi, int64(max(niceStep(float64(hi-lo)/1e6, 4), 1)*1e6)) {
		c.YTicks = append(c.YTicks, tick{num(y(v)), Count(v / 1_000_000)})
	}
	c.Zero = num(y(0))
	slot := c.PlotW() / float64(len(ws))
	every := max(1, int(math.Ceil(float64(len(ws))/16)))
	for i, w := range ws {
		x0 := c.Left + slot*float64(i)
		y0, y1 := y(0), y(w.RevenueMicros)
		// A few windows must not make slabs: bars stay at most 36 wide.
		bw := min(max(slot*0.8, 1), 36)
		c.Bars = append(c.Bars, revenueBar{
			X: num(x0 + (slot-bw)/2), W: num(bw),
			Y: num(min(y0, y1)), H: num(math.Abs(y0 - y1)),
			Class: stateClass(w.State),
			Title: fmtWindow(w.StartMs, w.EndMs) + " " + w.Dims + ": " + w.Revenue + " " + w.State,
		})
		if i%every == 0 {
			t := time.UnixMilli(w.StartMs).UTC()
			label := t.Format("15:04")
			if i == 0 || t.Hour() == 0 && t.Minute() == 0 {
				label = t.Format("Jan 02 15:04")
			}
			c.XTicks = append(c.XTicks, tick{num(x0 + slot/2), label})
		}
	}
	return c
}

// tradeOffChart is share late and too late against the bounds tried, evenly spaced.
type tradeOffChart struct {
	frame
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
