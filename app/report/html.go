package report

import (
	_ "embed"
	"html/template"
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

// writeHTML lays the content out as one self-contained page.
var writeHTML = render("html", htmlTemplate.Execute)

// Stylesheet is the HTML report's CSS, so app/live shares its look without a copy.
func Stylesheet() string {
	_, rest, _ := strings.Cut(htmlSource, "<style>")
	css, _, _ := strings.Cut(rest, "</style>")
	return css
}
