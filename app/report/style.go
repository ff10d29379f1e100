package report

import "strings"

// Stylesheet is the HTML report's CSS, so app/live shares its look without a copy.
func Stylesheet() string {
	_, rest, _ := strings.Cut(htmlSource, "<style>")
	css, _, _ := strings.Cut(rest, "</style>")
	return css
}
