package live

import (
	_ "embed"
	"html/template"
)

//go:embed page.html.tmpl
var pageSource string

// page is what the page template renders; the figures arrive by script.
type page struct {
	Title string
	CSS   template.CSS
}

// pageTemplate is the live page: the report's stylesheet and a script that polls /api/live every
// second and redraws state, cards, charts, windows, partitions and audit records. It loads nothing
// from the network, and builds elements with textContent and setAttribute only, so data never
// becomes markup.
var pageTemplate = template.Must(template.New("live").Parse(pageSource))
