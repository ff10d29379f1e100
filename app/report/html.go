package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
)

//go:embed report.html.tmpl
var htmlSource string

//go:embed advice.html.tmpl
var adviceSource string

// htmlTemplate is parsed once; html/template escapes every value by its context.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": Count,
	"int64": func(v int) int64 { return int64(v) },
	// plus and minus offset a coordinate: {{.Bottom | plus 16}}.
	"plus":   func(d, v float64) string { return num(v + d) },
	"minus":  func(d, v float64) string { return num(v - d) },
	"signed": SignedCount,
	"orDash": orDash,
	"class":  stateClass,
}).Parse(htmlSource + adviceSource))

// htmlPage is the shared view plus the charts only HTML draws.
type htmlPage struct {
	view
	Delay   *histChart
	Revenue *revenueChart
	Advice  *adviceView
}

// adviceView is the advice with its trade-off chart.
type adviceView struct {
	*Advice
	Chart *tradeOffChart
}

// MaxPoints and LatestWindows let the page state the caps it applies.
func (htmlPage) MaxPoints() int     { return MaxTracePoints }
func (htmlPage) LatestWindows() int { return LatestWindows }

// NoMetricsText says why a job's run has no conservation verdict.
func (htmlPage) NoMetricsText() string { return noMetrics }

func writeHTML(w io.Writer, r Run) error {
	v := newView(r)
	p := htmlPage{view: v}
	if v.DelayTotal > 0 {
		p.Delay = newHistChart(r.Delays)
	}
	p.Revenue = newRevenueChart(v.Windows)
	if r.Advice != nil {
		p.Advice = &adviceView{Advice: r.Advice, Chart: newTradeOffChart(r.Advice.TradeOff)}
	}
	if err := htmlTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	return nil
}
