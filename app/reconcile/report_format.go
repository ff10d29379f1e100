package reconcile

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
)

// markdown renders the report as GitHub-flavoured Markdown.
func markdown(r Report) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Reconcile %s\n\n", r.RunID)
	verdict := "nothing material found (exit 0)"
	if r.ExitCode == ExitMaterial {
		verdict = fmt.Sprintf("%d material differences (exit 1)", r.Material)
		if r.Apply {
			verdict += fmt.Sprintf(", %d corrections written", r.Applied)
		}
	}
	p("**%s**\n\n", verdict)
	p("| | |\n|---|---|\n")
	p("| started | %s |\n| finished | %s |\n", r.Started, r.Finished)
	p("| source | `%s` (%d partitions) |\n| sink | `%s` |\n", mdCell(r.Source), len(r.Partitions), mdCell(r.Sink))
	p("| range | %s |\n| apply | %t |\n| tolerance | %s |\n", r.Range, r.Apply, r.Tolerance)
	for _, k := range slices.Sorted(maps.Keys(r.Config)) {
		p("| %s | %s |\n", k, orNone(mdCell(r.Config[k])))
	}
	p("\n## Raw log\n\n| | |\n|---|---|\n")
	for _, row := range statsRows(r.Stats) {
		p("| %s | %s |\n", row[0], mdCell(row[1]))
	}
	p("\n## Windows\n\n")
	p("%d checked, %d differing (%d material): %d too_late, %d missing_window, %d unexplained. Total delta %s revenue, %s events.\n\n",
		r.WindowsChecked, r.WindowsDiffering, r.Material, r.ByClass[ClassTooLate], r.ByClass[ClassMissingWindow],
		r.ByClass[ClassUnexplained], r.TotalDelta, signedCount(r.TotalDeltaCount))
	mdDiffs(&b, r.Diffs)
	p("\n## Metrics\n\nThe comparison's figures, in the `%s` namespace: %s.\n\n", Namespace, metricsNote(r))
	p("| metric | value |\n|---|--:|\n")
	for _, n := range MetricNames {
		p("| %s | %d |\n", n, r.Metrics[n])
	}
	p("\n## Open windows (not yet FINAL)\n\n")
	p("%d checked, %d differing. Reported only: the stream may still correct them, so they are neither material nor applied.\n\n",
		r.OpenChecked, r.OpenDiffering)
	mdDiffs(&b, r.Open)
	return b.Bytes(), nil
}

func mdDiffs(b *bytes.Buffer, diffs []ReportDiff) {
	if len(diffs) == 0 {
		b.WriteString("None.\n")
		return
	}
	b.WriteString("| window_start | dims | state | streamed | recomputed | delta | count | too late | classification | material | applied |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|---|---|--:|\n")
	for _, d := range diffs {
		fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s | %d → %d | %s (%d) | %s | %t | %s |\n",
			d.WindowStart, mdCell(d.Dims), orDash(d.StreamedState), d.Streamed, d.Recomputed, d.Delta,
			d.StreamedCount, d.RecompCount, d.TooLate, d.TooLateCount, orDash(d.Classification), d.Material, appliedCell(d))
	}
}

// mdCell keeps a value inside its table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// orNone shows an empty setting (no dimensions) as such, not as "“".
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return "`" + s + "`"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// appliedCell says what --apply did with a diff.
func appliedCell(d ReportDiff) string {
	switch {
	case d.Applied > 0:
		return fmt.Sprintf("rev %d", d.Applied)
	case d.Held:
		return "held: window not in raw log"
	}
	return "-"
}

// statsRows lists the raw-log figures in reading order.
func statsRows(s Stats) [][2]string {
	n := func(v int64) string { return fmt.Sprint(v) }
	rows := [][2]string{
		{"partitions", n(s.Partitions)},
		{"files", n(s.Files)},
		{"records read", n(s.Read)},
		{"blank lines skipped", n(s.Blank)},
		{"quarantined", n(s.QuarantinedTotal())},
	}
	for _, reason := range slices.Sorted(maps.Keys(s.Quarantined)) {
		rows = append(rows, [2]string{"  " + reason, n(s.Quarantined[reason])})
	}
	rows = append(rows,
		[2]string{"  of which future_event_time by the stream's verdict", n(s.StreamFuture)},
		[2]string{"valid copies", n(s.Valid)},
		[2]string{"distinct event ids (counted once)", n(s.IDs)},
		[2]string{"duplicate copies", n(s.Duplicates)},
		[2]string{"ids with conflicting payloads", n(s.ConflictingIDs)},
		[2]string{"conflicting copies (reported, not summed)", n(s.ConflictingCopies)},
		[2]string{"  chosen: the stream's first_fingerprint", n(s.ByStreamFingerprint)},
		[2]string{"  chosen: the copy the stream counted", n(s.ByStreamCounted)},
		[2]string{"  chosen: lowest source_position", n(s.ByLowestPosition)},
		[2]string{"  first_fingerprint not in the raw log", n(s.StreamFingerprintMissing)},
		[2]string{"ids the stream judged too late", n(s.TooLateIDs)},
		[2]string{"raw-log watermark (lowest partition)", s.logWatermark()},
	)
	if len(s.Unterminated) > 0 {
		rows = append(rows, [2]string{"unterminated last lines (read)", strings.Join(s.Unterminated, ", ")})
	}
	return rows
}

// htmlReport renders a self-contained page: inline CSS, no scripts, no
// external resources, so it can be mailed or archived as one file.
func htmlReport(r Report) ([]byte, error) {
	var b bytes.Buffer
	var metrics [][2]string
	for _, n := range MetricNames {
		metrics = append(metrics, [2]string{n, fmt.Sprint(r.Metrics[n])})
	}
	err := htmlTemplate.Execute(&b, struct {
		Report
		Stats       [][2]string
		Namespace   string
		Metrics     [][2]string
		MetricsNote string
	}{r, statsRows(r.Stats), Namespace, metrics, metricsNote(r)})
	return b.Bytes(), err
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"applied": appliedCell,
	"orDash":  orDash,
	"signed":  signedCount,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Reconcile {{.RunID}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font-size: 90%; }
.verdict { font-weight: bold; padding: .4em .8em; display: inline-block; border-radius: 4px; }
.clean { background: #e3f4e1; } .material { background: #fde2e1; }
tr.immaterial td { color: #777; }
</style>
</head>
<body>
<h1>Reconcile {{.RunID}}</h1>
{{if eq .ExitCode 1}}<p class="verdict material">{{.Material}} material differences (exit 1){{if .Apply}}, {{.Applied}} corrections written{{end}}</p>
{{else}}<p class="verdict clean">Nothing material found (exit 0)</p>{{end}}
<table>
<tr><th>started</th><td>{{.Started}}</td></tr>
<tr><th>finished</th><td>{{.Finished}}</td></tr>
<tr><th>source</th><td><code>{{.Source}}</code> ({{len .Partitions}} partitions)</td></tr>
<tr><th>sink</th><td><code>{{.Sink}}</code></td></tr>
<tr><th>range</th><td>{{.Range}}</td></tr>
<tr><th>apply</th><td>{{.Apply}}</td></tr>
<tr><th>tolerance</th><td>{{.Tolerance}}</td></tr>
{{range $k, $v := .Config}}<tr><th>{{$k}}</th><td>{{if $v}}<code>{{$v}}</code>{{else}}(none){{end}}</td></tr>
{{end}}</table>

<h2>Raw log</h2>
<table>
{{range .Stats}}<tr><th>{{index . 0}}</th><td class="n">{{index . 1}}</td></tr>
{{end}}</table>

<h2>Windows</h2>
<p>{{.WindowsChecked}} checked, {{.WindowsDiffering}} differing ({{.Material}} material):
{{index .ByClass "too_late"}} too_late, {{index .ByClass "missing_window"}} missing_window, {{index .ByClass "unexplained"}} unexplained.
Total delta {{.TotalDelta}} revenue, {{signed .TotalDeltaCount}} events.</p>
{{template "diffs" .Diffs}}

<h2>Metrics</h2>
<p>The comparison's figures, in the <code>{{.Namespace}}</code> namespace: {{.MetricsNote}}.</p>
<table>
{{range .Metrics}}<tr><th>{{index . 0}}</th><td class="n">{{index . 1}}</td></tr>
{{end}}</table>

<h2>Open windows (not yet FINAL)</h2>
<p>{{.OpenChecked}} checked, {{.OpenDiffering}} differing. Reported only: the stream may still correct them, so they are neither material nor applied.</p>
{{template "diffs" .Open}}
</body>
</html>
{{define "diffs"}}{{if .}}<table>
<tr><th>window_start</th><th>dims</th><th>state</th><th>streamed</th><th>recomputed</th><th>delta</th><th>count</th><th>too late</th><th>classification</th><th>applied</th></tr>
{{range .}}<tr{{if not .Material}} class="immaterial"{{end}}><td>{{.WindowStart}}</td><td><code>{{.Dims}}</code></td><td>{{orDash .StreamedState}}</td>
<td class="n">{{.Streamed}}</td><td class="n">{{.Recomputed}}</td><td class="n">{{.Delta}}</td>
<td class="n">{{.StreamedCount}} → {{.RecompCount}}</td><td class="n">{{.TooLate}} ({{.TooLateCount}})</td>
<td>{{orDash .Classification}}{{if and .Classification (not .Material)}} (within tolerance){{end}}</td><td>{{applied .}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}{{end}}
`))
