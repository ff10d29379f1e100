package live

import "html/template"

// page is what the page template renders; the figures arrive by script.
type page struct {
	Title string
	CSS   template.CSS
}

// pageTemplate is the live page: the report's stylesheet and a script that polls /api/live every
// second and redraws state, cards, charts, windows, partitions and audit records. It loads nothing
// from the network, and builds elements with textContent and setAttribute only, so data never
// becomes markup.
var pageTemplate = template.Must(template.New("live").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="icon" href="data:,">
<style>{{.CSS}}
.cards { grid-template-columns: repeat(7, 1fr); }
.state { font-size: 12px; vertical-align: middle; margin-left: 8px; }
.state.RUNNING { background: var(--ontime); } .state.STOPPING { background: var(--late); }
.state.DONE { background: var(--final); } .state.CANCELLED { background: #8f4410; } .state.FAILED { background: var(--bad); }
.state.STARTING { background: var(--early); }
td.idle { color: var(--late); font-weight: 600; } td.active { color: var(--final); }
tr.fresh td { animation: fresh 1.2s ease-out; }
@keyframes fresh { from { background: #fff4d6; } to { background: transparent; } }
.ended { margin: 12px 0 0; padding: 10px 14px; border-radius: 8px; border-left: 6px solid; font-weight: 600; }
.ended.DONE { border-color: var(--final); background: #e6f4ec; color: #22643f; }
.ended.CANCELLED { border-color: var(--late); background: #fdf0e5; color: #8f4410; }
.ended.FAILED { border-color: var(--bad); background: #fbe9e9; color: var(--bad); }
.sparks { display: grid; grid-template-columns: repeat(6, 1fr); gap: 10px; }
.lags { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; margin-top: 10px; }
figure.chart { margin: 0; border: 1px solid var(--rule); border-radius: 6px; padding: 6px 8px 4px; }
figure.chart figcaption { display: flex; justify-content: space-between; gap: 8px; font-size: 12px; color: var(--muted); }
figure.chart figcaption b { color: var(--ink); font-variant-numeric: tabular-nums; }
figure.chart .scale { font-size: 11px; color: var(--muted); text-align: right; line-height: 1.2; }
figure.chart svg { width: 100%; height: 42px; display: block; }
.lags figure.chart svg { height: 90px; }
figure.chart polyline { fill: none; stroke-width: 1.5; vector-effect: non-scaling-stroke; }
figure.chart .base { stroke: var(--rule); vector-effect: non-scaling-stroke; }
.keys { display: flex; flex-wrap: wrap; gap: 2px 10px; font-size: 11px; color: var(--muted); }
.keys i { display: inline-block; width: 10px; height: 3px; vertical-align: middle; margin-right: 3px; }
td.next div { white-space: nowrap; font-size: 12px; }
#wins ol.revs { display: block; }
#wins ol.revs li + li::before { content: none; }
#wins ol.revs .add { color: var(--muted); font-size: 12px; }
#wins ol.revs .why { color: var(--muted); font-size: 12px; margin-left: 4px; }
#wins ol.revs .why .cause { color: var(--ink); }
td.next .due { color: var(--ontime); }
details > summary { cursor: pointer; }
details > summary h2 { display: inline; }
td.payload { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; overflow-wrap: anywhere; max-width: 420px; }
td.pos { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; white-space: nowrap; }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}} <span id="state" class="badge state STARTING">STARTING</span></h1>
<p class="meta" id="meta">waiting for the job…</p>
<div class="settings" id="settings"></div>
<p class="ended" id="ended" hidden></p>
</header>
<section class="cards" aria-label="conservation" id="cards"></section>
<section id="series">
<h2>The last minutes</h2>
<p class="note">Records read and their verdicts per second (from the counters' deltas over the last 10 s; a gap where the job's metrics restarted), and how far the watermarks trail the clock. The charts span the last <span id="span">-</span> (at most <span id="span-max">10 min</span>), each from 0 to its largest value (under it, right).</p>
<div class="sparks" id="sparks"></div>
<div class="lags" id="lags"></div>
</section>
<section id="windows">
<h2>Revisions per window</h2>
<p class="note">The latest windows, newest first; every accepted snapshot in revision order: <span class="badge early">EARLY</span> <span class="badge ontime">ON_TIME</span> <span class="badge late">LATE</span> <span class="badge final">FINAL</span>, each a complete total (never a delta), with what it added to the one before, when the sink wrote it (UTC, and how long after the window's end on the clock) and what caused it. <span id="keys"></span></p>
<table style="width:100%"><thead><tr><th>window (UTC)</th><th>dims</th><th>state</th><th class="n">revenue</th><th class="n">events</th><th>revisions: added · written · cause</th><th>next (pipeline watermark)</th></tr></thead><tbody id="wins"></tbody></table>
<p class="note">Causes: an EARLY tick is the processing-time trigger (every --early) finding new data since the last row; ON_TIME comes when the watermark passes the window's end; LATE rows carry data that came within the allowed lateness (the sink does not record from which partition: see the idle episodes under Audit records for partitions that came back); FINAL comes when the watermark passes end + allowed lateness, changed or not; a correction is written by reconcile --apply. <span id="written-note"></span></p>
<p class="note">Next: how far the pipeline watermark still has to advance for the window's ON_TIME row (its end) and its FINAL row (its end + allowed lateness). The watermark trails the newest event times by the out-of-order bound, so on a live feed ON_TIME comes about that long after the window's end on the clock.</p>
</section>
<div class="grid2">
<section id="watermarks">
<h2>Watermark per partition</h2>
<p class="note">Largest event time seen minus the out-of-order bound; an idle partition leaves the minimum. Pipeline watermark (minimum over active partitions): <b id="wm">-</b></p>
<table style="width:100%"><thead><tr><th>partition</th><th>watermark (UTC)</th><th class="n">behind now</th><th>state</th><th class="n">read</th></tr></thead><tbody id="parts"></tbody></table>
</section>
<section id="audit">
<h2>Audit</h2>
<p class="identity" id="identity"></p>
<table style="margin-top:12px"><thead><tr><th>rows emitted by state</th><th class="n">rows</th></tr></thead><tbody id="rows"></tbody></table>
</section>
</div>
<section id="drill">
<details id="drill-details">
<summary><h2>Audit records</h2> <span class="note" id="drill-sum">none read yet</span></summary>
<p class="note">The latest records of each audit table, newest first (by source file and line), as the sink holds them, read every <span id="drill-every">10 s</span>: SQLite and BigQuery sort and cut each table themselves and count its rows, so the page never holds a whole table. <span id="drill-err"></span></p>
<h3>Too late <span class="note" id="tl-n"></span></h3>
<p class="note">Valid events whose window had closed (end + allowed lateness) for their partition's watermark when they came. Late by: their event-time lateness was at least this (the watermark then is not stored, only that it had reached the close).</p>
<table style="width:100%"><thead><tr><th>source position</th><th>event_id</th><th>event time (UTC)</th><th>window, closed at</th><th class="n">late by</th><th>payload</th></tr></thead><tbody id="tl"></tbody></table>
<h3>Conflicts <span class="note" id="cf-n"></span></h3>
<p class="note">Copies of an event_id whose payload differs from the counted copy: both payloads' fingerprints; the table keeps the conflicting copy's payload (the counted one is in the raw log).</p>
<table style="width:100%"><thead><tr><th>source position</th><th>event_id</th><th>fingerprints: counted → conflicting</th><th>conflicting payload</th></tr></thead><tbody id="cf"></tbody></table>
<h3>Quarantined <span class="note" id="qu-n"></span></h3>
<table style="width:100%"><thead><tr><th>source position</th><th>reason</th><th>line</th></tr></thead><tbody id="qu"></tbody></table>
<h3>Idle episodes <span class="note" id="idle-n"></span></h3>
<p class="note">Times a partition was idle (no data for --idle-timeout: out of the watermark's minimum, so the others' windows could close), newest first, as this page's monitor saw them since <span id="idle-since">-</span>: nothing stores idleness, so the bounds are those of the snapshots that saw it begin and end, and an episode shorter than a snapshot may go unseen; the job counts every move to idle: <span id="idle-moves">-</span>. Records after: what the partition delivered from going idle to being seen active again (its backlog, as far as the job's counters were committed).</p>
<table style="width:100%"><thead><tr><th>partition</th><th>idle from (UTC)</th><th>until</th><th class="n">for</th><th>watermark held at</th><th class="n">records after</th></tr></thead><tbody id="idle"></tbody></table>
</details>
</section>
<footer>hourly revenue · live page · refreshes every second · self-contained: nothing is loaded from the network</footer>
</main>
<script>
"use strict";
const classes = {EARLY: "early", ON_TIME: "ontime", LATE: "late", FINAL: "final"};
const seen = new Map();
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function badge(state) { return el("span", "badge " + (classes[state] || "unknown"), state); }
function num(v) { return Number(v).toLocaleString("en-US"); }
// money shows micros as currency: two decimals, rounded half up, thousands separators.
function money(m) {
  const cents = Math.round(Math.abs(m) / 10000);
  return (m < 0 ? "-" : "") + Math.floor(cents / 100).toLocaleString("en-US") + "." + String(cents % 100).padStart(2, "0");
}
// span shows a window as 2026-11-30 12:00–13:00, with seconds where a bound has any.
function span(start, end) {
  const n = start.slice(17, 19) !== "00" || end.slice(17, 19) !== "00" ? 19 : 16;
  return start.slice(0, 10) + " " + start.slice(11, n) + "–" + end.slice(11, n);
}
// iso is an epoch-ms instant as RFC 3339 UTC, without milliseconds.
function iso(ms) { return new Date(ms).toISOString().slice(0, 19) + "Z"; }
// dur shows ms as 850ms, 12.3s, 4m05s or 2h07m.
function dur(ms) {
  const a = Math.abs(ms), sign = ms < 0 ? "-" : "";
  if (a < 1000) return sign + Math.round(a) + "ms";
  if (a < 60000) return sign + (a / 1000).toFixed(1) + "s";
  const s = Math.round(a / 1000);
  if (s < 3600) return sign + Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return sign + Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
}
function rate(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
function fill(id, nodes) { document.getElementById(id).replaceChildren(...nodes); }
function last(values) { for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i]; return null; }

const NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) { const e = document.createElementNS(NS, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }
const palette = ["#2b6cb0", "#dd6b20", "#2f855a", "#805ad5", "#c53030", "#319795", "#b7791f", "#4a5568"];
// chart draws lines ({name, colour, values}) against the times at, from 0 to the largest value; a
// null breaks a line.
function chart(kind, caption, value, at, lines, w, h, fmt) {
  const f = el("figure", "chart"); f.dataset.series = kind;
  let top = 0;
  for (const l of lines) for (const v of l.values) if (v !== null && v > top) top = v;
  const cap = el("figcaption"); cap.append(el("span", "", caption), el("b", "", value)); f.append(cap);
  const g = svg("svg", {viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "none", role: "img"});
  g.setAttribute("aria-label", caption);
  g.append(svg("line", {x1: 0, y1: h - 0.5, x2: w, y2: h - 0.5, class: "base"}));
  const end = at.length ? at[at.length - 1] : 0, start = at.length ? at[0] : 0, range = Math.max(1, end - start);
  top = top || 1;
  const x = ms => (w * (ms - start) / range).toFixed(1), y = v => (h - 1 - (h - 3) * Math.max(0, v) / top).toFixed(1);
  let points = 0;
  for (const l of lines) {
    let seg = [];
    const flush = () => {
      if (seg.length > 1) { const p = svg("polyline", {points: seg.join(" "), stroke: l.colour}); p.dataset.name = l.name; g.append(p); points += seg.length; }
      seg = [];
    };
    l.values.forEach((v, i) => { if (v === null) flush(); else seg.push(x(at[i]) + "," + y(v)); });
    flush();
  }
  f.dataset.points = points; f.dataset.max = top;
  f.append(g, el("div", "scale", "0 – " + fmt(top)));
  return f;
}
function renderSeries(s) {
  const v = s.series;
  if (!v) return;
  const at = v.at_ms;
  document.getElementById("span").textContent = at.length > 1 ? dur(at[at.length - 1] - at[0]) : "-";
  document.getElementById("span-max").textContent = v.span_ms % 60000 === 0 ? v.span_ms / 60000 + " min" : dur(v.span_ms);
  fill("sparks", v.rates.map(r => {
    const now = last(r.per_s);
    return chart(r.name, r.name + " /s", now === null ? "-" : rate(now), at, [{name: r.name, colour: r.name === "read" ? "#4a6fa5" : "#2f855a", values: r.per_s}], 200, 42, rate);
  }));
  const wl = last(v.watermark_lag_ms);
  const parts = v.partitions.map((p, i) => ({name: p.name, colour: palette[i % palette.length], values: p.lag_ms}));
  const pf = chart("partition_lag", "watermark lag per partition", "", at, parts, 400, 90, dur);
  const keys = el("div", "keys");
  for (const p of parts) { const k = el("span"); const sw = el("i"); sw.style.background = p.colour; const l = last(p.values); k.append(sw, p.name + " " + (l === null ? "-" : dur(l))); keys.append(k); }
  pf.append(keys);
  fill("lags", [chart("watermark_lag", "pipeline watermark lag (now − watermark)", wl === null ? "-" : dur(wl), at,
    [{name: "pipeline", colour: "#2f855a", values: v.watermark_lag_ms}], 400, 90, dur), pf]);
}
// need says how far the watermark still has to go for a state's row.
function need(state, ms) {
  const d = el("div"); d.dataset.next = state;
  d.append(badge(state), " ");
  if (ms > 0) d.append("watermark needs +" + dur(ms));
  else d.append(el("span", "due", "due: watermark passed by " + dur(-ms)));
  return d;
}
// causes says what made the job write a revision (Revision.Cause).
const causes = {early_tick: "EARLY tick", watermark: "watermark passed the end", late_data: "late data",
  closed: "watermark passed end + lateness", reconcile: "correction by reconcile"};
function cause(r, first) {
  if (r.cause === "late_data" && first) return "late data: the window's first, after the watermark passed its end";
  return causes[r.cause] || r.cause || "-";
}
// added says what a revision added to the one before it.
function added(r) {
  if (r.added_events === 0 && r.added_revenue_micros === 0) return "(unchanged)";
  const sign = v => v < 0 ? "−" : "+";
  return "(" + sign(r.added_events) + num(Math.abs(r.added_events)) + " ev, " + sign(r.added_revenue_micros) + money(Math.abs(r.added_revenue_micros)) + ")";
}
// written says when the sink wrote a revision, and how long after the window's end.
function written(r) {
  if (r.written_at_ms === undefined) return "write time not returned";
  const a = r.written_after_end_ms;
  return "written " + r.written_at.slice(11, 23) + ", " + (a >= 0 ? "end +" + dur(a) : dur(-a) + " before the end");
}
function nextCell(w) {
  const td = el("td", "next");
  if (w.state === "FINAL") { td.append(el("div", "", "closed")); return td; }
  if (w.state === "EARLY" && w.on_time_watermark_needs_ms !== undefined) td.append(need("ON_TIME", w.on_time_watermark_needs_ms));
  if (w.final_watermark_needs_ms !== undefined) td.append(need("FINAL", w.final_watermark_needs_ms));
  return td;
}
function payloadCell(p) {
  const td = el("td", "payload", p.payload + (p.payload_cut ? " … (" + num(p.payload_bytes) + " bytes)" : ""));
  return td;
}
// summary is the drill-down's one line, shown while it is collapsed.
const summary = {audit: "", idle: ""};
function renderAudit(a) {
  if (!a) return;
  summary.audit = num(a.too_late_rows) + " too late · " + num(a.conflict_rows) + " conflicts · " +
    num(a.quarantined_rows) + " quarantined · read " + a.read_at.slice(11, 19);
  document.getElementById("drill-every").textContent = dur(a.every_ms);
  document.getElementById("drill-err").textContent = a.error || "";
  const of = (shown, rows) => "(latest " + shown + " of " + num(rows) + ")";
  document.getElementById("tl-n").textContent = of((a.too_late || []).length, a.too_late_rows);
  document.getElementById("cf-n").textContent = of((a.conflicts || []).length, a.conflict_rows);
  document.getElementById("qu-n").textContent = of((a.quarantined || []).length, a.quarantined_rows);
  fill("tl", (a.too_late || []).map(e => {
    const tr = el("tr"); tr.dataset.position = e.source_position;
    const win = e.window_start_ms !== undefined ? span(iso(e.window_start_ms), iso(e.window_end_ms)) + ", closed " + iso(e.closed_ms).slice(11, 19) : "-";
    tr.append(el("td", "pos", e.source_position), el("td", "pos", e.event_id), el("td", "win", e.event_time), el("td", "win", win),
      el("td", "n late", e.late_by_at_least_ms !== undefined ? "≥ " + dur(e.late_by_at_least_ms) : "-"), payloadCell(e));
    return tr;
  }));
  fill("cf", (a.conflicts || []).map(e => {
    const tr = el("tr"); tr.dataset.position = e.source_position;
    tr.append(el("td", "pos", e.source_position), el("td", "pos", e.event_id), el("td", "pos", e.first_fingerprint + " → " + e.conflicting_fingerprint), payloadCell(e));
    return tr;
  }));
  fill("qu", (a.quarantined || []).map(e => {
    const tr = el("tr"); tr.dataset.position = e.source_position;
    tr.append(el("td", "pos", e.source_position), el("td", "", e.reason), payloadCell(e));
    return tr;
  }));
}
let ended = false;
function render(s) {
  const st = document.getElementById("state");
  st.textContent = s.state; st.className = "badge state " + s.state;
  const end = document.getElementById("ended");
  ended = s.final;
  if (s.final) {
    // A final state stays in view, in a banner of its own colour.
    end.hidden = false; end.className = "ended " + s.state;
    end.textContent = "The job has ended: " + s.state + " at " + s.ended_at + " after " + s.elapsed + ". The figures below are its last.";
    document.title = s.state + " · " + s.title;
  }
  document.getElementById("meta").textContent = "as of " + s.at + (s.elapsed ? (s.final ? " · ran for " : " · running for ") + s.elapsed : "") + (s.sink_error ? " · sink: " + s.sink_error : "");
  fill("settings", (s.settings || []).map(x => { const e = el("span", "", x.name + " "); e.append(el("b", "", x.value)); return e; }));
  const cards = [];
  if (s.figures) {
    const card = (k, v, cls) => { const c = el("div", "card" + (cls ? " " + cls : "")); c.append(el("div", "k", k), el("div", "v", v)); return c; };
    cards.push(card("read", num(s.read)));
    for (const t of s.terms) cards.push(card(t.name, num(t.value)));
    cards.push(card("conservation", s.conserved ? "✓ holds" : "… in flight", s.conserved ? "ok" : ""));
  }
  fill("cards", cards);
  renderSeries(s);
  document.getElementById("identity").textContent = s.identity || "";
  fill("rows", (s.rows_by_state || []).map(r => { const tr = el("tr"); const td = el("td"); td.append(badge(r.name)); tr.append(td, el("td", "n", num(r.value))); return tr; }));
  document.getElementById("wm").textContent = s.watermark || "-";
  fill("parts", (s.partitions || []).map(p => {
    const tr = el("tr"); tr.dataset.partition = p.name;
    tr.append(el("td", "", p.name), el("td", "win", p.watermark), el("td", "n", p.behind), el("td", p.idle ? "idle" : "active", p.idle ? "idle" : "active"), el("td", "n", num(p.read)));
    return tr;
  }));
  document.getElementById("keys").textContent = s.keys ? "The sink holds " + num(s.keys) + " keys." : "";
  document.getElementById("written-note").textContent = s.write_times || !(s.windows || []).length ? "" :
    "This sink's reader returns no write times (the jsonl debug sink's does not).";
  fill("wins", (s.windows || []).map(w => {
    const key = w.window_start + " " + w.dims;
    const tr = el("tr", seen.has(key) && seen.get(key) !== w.revision ? "fresh" : "");
    seen.set(key, w.revision);
    tr.dataset.window = w.window_start; tr.dataset.state = w.state;
    if (w.revisions.some(r => r.state === "LATE")) tr.classList.add("latewin");
    const st = el("td"); st.append(badge(w.state));
    const ol = el("ol", "revs");
    w.revisions.forEach((r, i) => {
      if (i === 2 && w.omitted > 0) ol.append(el("li", "gap", w.omitted + " more"));
      const li = el("li"); li.dataset.revision = r.revision; li.dataset.cause = r.cause;
      if (r.written_at_ms !== undefined) li.dataset.written = r.written_at;
      li.append(el("span", "r", "r" + r.revision), " ", badge(r.state), " " + money(r.revenue_micros) + " ", el("span", "r", "· " + num(r.count) + " ev"),
        " ", el("span", "add", added(r)));
      if (r.writer) li.append(" ", el("span", "w", r.writer));
      const why = el("span", "why");
      why.append("· ", el("span", "when", written(r)), " · ", el("span", "cause", cause(r, r.revision === 1 || (i === 0 && w.omitted === 0))));
      li.append(why);
      ol.append(li);
    });
    const revs = el("td"); revs.append(ol);
    tr.append(el("td", "win", span(w.window_start, w.window_end)), el("td", "dims", w.dims), st,
      el("td", "n money", money(w.revenue_micros)), el("td", "n", num(w.count)), revs, nextCell(w));
    return tr;
  }));
  renderAudit(s.audit);
  renderIdle(s.idle);
  const sum = [summary.audit, summary.idle].filter(x => x).join(" · ");
  if (sum) document.getElementById("drill-sum").textContent = sum;
}
function renderIdle(v) {
  if (!v) return;
  const eps = v.episodes || [];
  summary.idle = eps.length + " idle episode" + (eps.length === 1 ? "" : "s");
  document.getElementById("idle-n").textContent = "(" + eps.length + " seen" + (v.dropped ? ", latest kept; " + v.dropped + " older" : "") + ")";
  document.getElementById("idle-since").textContent = iso(v.watched_since_ms);
  document.getElementById("idle-moves").textContent = (v.moves_to_idle || []).map(m => m.name + " " + num(m.value)).join(", ") || "-";
  fill("idle", eps.map(e => {
    const tr = el("tr"); tr.dataset.partition = e.partition; tr.dataset.ongoing = e.ongoing;
    const from = iso(e.since_ms).slice(11, 19) + (e.active_seen_ms ? " (active at " + iso(e.active_seen_ms).slice(11, 19) + ")" : " (idle when first seen)");
    tr.append(el("td", "", e.partition), el("td", "win", from), el("td", e.ongoing ? "idle" : "win", e.ongoing ? "still idle" : iso(e.until_ms).slice(11, 19)),
      el("td", "n", dur(e.duration_ms)), el("td", "win", e.watermark_ms !== undefined ? iso(e.watermark_ms) : "-"),
      el("td", "n", e.ongoing ? "-" : "+" + num(e.read_after - e.read)));
    return tr;
  }));
}
// poll never gives up: a failed fetch keeps the last figures and tries again, less often.
async function poll() {
  let wait = 1000;
  try {
    const r = await fetch("api/live", {cache: "no-store"});
    if (r.ok) render(await r.json());
    else throw new Error("HTTP " + r.status);
  } catch (e) {
    document.getElementById("meta").textContent = "no answer from the launcher (" + e.message + "): showing the last figures" + (ended ? ", the job's final ones" : "") + ", trying again";
    wait = 3000;
  }
  setTimeout(poll, wait);
}
poll();
</script>
</body>
</html>
`))
