package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is parsed once; html/template escapes every value by its context.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": Count,
	"int64": func(v int) int64 { return int64(v) },
	// plus and minus offset a coordinate: {{.Bottom | plus 16}}.
	"plus":      func(d, v float64) string { return num(v + d) },
	"minus":     func(d, v float64) string { return num(v - d) },
	"maxPoints": func() int { return MaxTracePoints },
}).Parse(htmlSource))

// htmlPage is the content plus the summary cards only HTML draws.
type htmlPage struct {
	content
	Cards []Figure // read and its terms
	Holds bool
}

// writeHTML lays the content out as one self-contained page.
func writeHTML(w io.Writer, r Run) error {
	p := htmlPage{content: newContent(r)}
	if k := r.Counts; k != nil {
		p.Cards, p.Holds = []Figure{{"read", Count(k.Read)}}, problem(*k) == ""
		for _, t := range k.Terms() {
			p.Cards = append(p.Cards, Figure{t.Name, Count(t.Value)})
		}
	}
	if err := htmlTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	return nil
}

// Stylesheet is the HTML report's CSS, so app/live shares its look without a copy.
func Stylesheet() string {
	_, rest, _ := strings.Cut(htmlSource, "<style>")
	css, _, _ := strings.Cut(rest, "</style>")
	return css
}
