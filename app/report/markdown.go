package report

import (
	_ "embed"
	"strings"
	"text/template"
)

//go:embed report.md.tmpl
var markdownSource string

// markdownTemplate lays the content out as Markdown; md and spans escape what data could mark up.
var markdownTemplate = template.Must(template.New("md").Funcs(template.FuncMap{"md": mdText, "spans": mdSpans}).Parse(markdownSource))

var writeMarkdown = render("markdown", markdownTemplate.Execute)

// mdSpans renders a text: bold and code set off, every other style plain.
func mdSpans(t text) string {
	var b strings.Builder
	for _, s := range t {
		switch {
		case s.Style == "code" && !strings.Contains(s.Text, "`"):
			b.WriteString("`" + mdCodeReplacer.Replace(s.Text) + "`")
		case s.Style == "b" || strings.HasPrefix(s.Style, "b "):
			b.WriteString("**" + mdText(s.Text) + "**")
		default: // a code span with a backtick inside falls back to escaped text
			b.WriteString(mdText(s.Text))
		}
	}
	return b.String()
}

// mdText neutralises Markdown and inline HTML markup in data: what could set off emphasis or code,
// close a link's text, end a table cell, open a tag or an entity; a line break becomes a space.
// "_" inside a word never starts emphasis; "<1m" opens no tag.
func mdText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch, next := s[i], byte(0)
		if i+1 < len(s) {
			next = s[i+1]
		}
		letter := 'a' <= next|0x20 && next|0x20 <= 'z'
		switch {
		case ch == '\r' && next == '\n':
		case ch == '\r' || ch == '\n':
			b.WriteByte(' ')
		case strings.IndexByte("\\`*]|", ch) >= 0:
			b.WriteString("\\" + string(ch))
		case ch == '<' && (letter || strings.IndexByte("/!?", next) >= 0):
			b.WriteString("&lt;")
		case ch == '&' && (letter || next == '#'):
			b.WriteString("&amp;")
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// mdCodeReplacer escapes a code span in a table cell: a pipe or a newline would break the table.
var mdCodeReplacer = strings.NewReplacer("|", "\\|", "\r\n", " ", "\n", " ", "\r", " ")

// textBar draws a proportional bar for a Markdown table.
func textBar(v, top int64, width int) string {
	if top == 0 || v == 0 {
		return ""
	}
	return strings.Repeat("█", max(1, int(int64(width)*v/top)))
}
