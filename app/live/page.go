package live

import "html/template"

// page is what the page template renders; the figures arrive by script.
type page struct {
	Title string
	CSS   template.CSS
}

// pageTemplate is the live page: the HTML report's stylesheet, a few rules
// of its own, and a script that polls /api/live every second and redraws.
// Everything is inline: the page loads nothing from the network. The
// script builds elements with textContent only, so data never becomes
// markup.
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
.state.DONE, .state.CANCELLED { background: var(--final); } .state.FAILED { background: var(--bad); }
.state.STARTING { background: var(--early); }
td.idle { color: var(--late); font-weight: 600; } td.active { color: var(--final); }
tr.fresh td { animation: fresh 1.2s ease-out; }
@keyframes fresh { from { background: #fff4d6; } to { background: transparent; } }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}} <span id="state" class="badge state STARTING">STARTING</span></h1>
<p class="meta" id="meta">waiting for the job…</p>
<div class="settings" id="settings"></div>
</header>
<section class="cards" aria-label="conservation" id="cards"></section>
<section id="windows">
<h2>Revisions per window</h2>
<p class="note">The latest windows, newest first; every accepted snapshot in revision order: <span class="badge early">EARLY</span> <span class="badge ontime">ON_TIME</span> <span class="badge late">LATE</span> <span class="badge final">FINAL</span>, each a complete total (never a delta). <span id="keys"></span></p>
<table style="width:100%"><thead><tr><th>window (UTC)</th><th>dims</th><th>state</th><th class="n">revenue</th><th class="n">events</th><th>revisions</th></tr></thead><tbody id="wins"></tbody></table>
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
// money shows micros (millionths, exact integers) as currency: two decimals,
// rounded half up, with thousands separators.
function money(m) {
  const cents = Math.round(Math.abs(m) / 10000);
  return (m < 0 ? "-" : "") + Math.floor(cents / 100).toLocaleString("en-US") + "." + String(cents % 100).padStart(2, "0");
}
// span shows a window as its date and its times, 2026-11-30 12:00–13:00.
function span(start, end) { return start.slice(0, 10) + " " + start.slice(11, 16) + "–" + end.slice(11, 16); }
function fill(id, nodes) { document.getElementById(id).replaceChildren(...nodes); }
function render(s) {
  const st = document.getElementById("state");
  st.textContent = s.state; st.className = "badge state " + s.state;
  document.getElementById("meta").textContent = "as of " + s.at + (s.elapsed ? " · running for " + s.elapsed : "") + (s.sink_error ? " · sink: " + s.sink_error : "");
  fill("settings", (s.settings || []).map(x => { const e = el("span", "", x.name + " "); e.append(el("b", "", x.value)); return e; }));
  const cards = [];
  if (s.figures) {
    const card = (k, v, cls) => { const c = el("div", "card" + (cls ? " " + cls : "")); c.append(el("div", "k", k), el("div", "v", v)); return c; };
    cards.push(card("read", num(s.read)));
    for (const t of s.terms) cards.push(card(t.name, num(t.value)));
    cards.push(card("conservation", s.conserved ? "✓ holds" : "… in flight", s.conserved ? "ok" : ""));
  }
  fill("cards", cards);
  document.getElementById("identity").textContent = s.identity || "";
  fill("rows", (s.rows_by_state || []).map(r => { const tr = el("tr"); const td = el("td"); td.append(badge(r.name)); tr.append(td, el("td", "n", num(r.value))); return tr; }));
  document.getElementById("wm").textContent = s.watermark || "-";
  fill("parts", (s.partitions || []).map(p => {
    const tr = el("tr"); tr.dataset.partition = p.name;
    tr.append(el("td", "", p.name), el("td", "win", p.watermark), el("td", "n", p.behind), el("td", p.idle ? "idle" : "active", p.idle ? "idle" : "active"), el("td", "n", num(p.read)));
    return tr;
  }));
  document.getElementById("keys").textContent = s.keys ? "The sink holds " + num(s.keys) + " keys." : "";
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
      const li = el("li");
      li.append(el("span", "r", "r" + r.revision), " ", badge(r.state), " " + money(r.revenue_micros) + " ", el("span", "r", "· " + num(r.count) + " ev"));
      if (r.writer) li.append(" ", el("span", "w", r.writer));
      ol.append(li);
    });
    const revs = el("td"); revs.append(ol);
    tr.append(el("td", "win", span(w.window_start, w.window_end)), el("td", "dims", w.dims), st,
      el("td", "n money", money(w.revenue_micros)), el("td", "n", num(w.count)), revs);
    return tr;
  }));
}
// poll never gives up: a failed fetch (the launcher restarting, a network
// hiccup) keeps the last figures and tries again, less often.
async function poll() {
  let wait = 1000;
  try {
    const r = await fetch("api/live", {cache: "no-store"});
    if (r.ok) render(await r.json());
    else throw new Error("HTTP " + r.status);
  } catch (e) {
    document.getElementById("meta").textContent = "no answer from the launcher (" + e.message + "): showing the last figures, trying again";
    wait = 3000;
  }
  setTimeout(poll, wait);
}
poll();
</script>
</body>
</html>
`))
