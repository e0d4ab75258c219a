"""The sweep page: one HTML document that polls ``data.json`` every second.

Each sweep gets a section: its progress (done, failed, time left), a banner when it
has finished, the grid of points by status beside a Bokeh plot of the measured time
against nodes (the plot is embedded once, from ``plot.json``, and its data sources
are refilled on every poll), and the failed points with their error. The plot's
container reports what the Bokeh document holds, for anyone checking the page:
``data-glyphs`` (measured points drawn), ``data-bands`` (series with a projection
band) and ``data-node-counts`` (distinct node counts measured).
"""

from __future__ import annotations

__all__ = ["PAGE"]

_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin: 1.2em 0 0.3em; }
a { color: #0b5394; }  /* not a series colour of the plot */
table { border-collapse: collapse; margin-top: 0.4em; }
th, td { border: 1px solid #ccc; padding: 4px 6px; font-size: 0.85em; }
th { background: #f4f4f4; font-weight: normal; }
td.row { text-align: right; white-space: nowrap; background: #fafafa; }
.box { display: inline-block; min-width: 4.2em; margin: 1px; padding: 3px 4px;
       border-radius: 3px; text-align: center; font-size: 0.8em; color: #111; }
.pending { background: #dddddd; } .running { background: #f0ad4e; }
.ok { background: #7bc67b; } .failed { background: #e06666; color: #fff; }
.timeout { background: #9b59b6; color: #fff; } .invalid { background: #e69138; }
.stored { background: #a9cce3; }
.legend .box { min-width: 6em; }
.median { font-weight: bold; font-size: 0.85em; margin-top: 2px; }
.note { margin: 0.3em 0; font-size: 0.9em; color: #444; }
.progress { font-size: 1em; margin: 0.3em 0; }
.banner { padding: 6px 10px; border-radius: 4px; margin: 0.4em 0; font-weight: bold; }
.banner.finished { background: #dff0d8; border: 1px solid #7bc67b; }
.banner.with-failures { background: #fcf8e3; border: 1px solid #e69138; }
.banner.stopped { background: #eeeeee; border: 1px solid #999; }
.layout { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.layout > .grid { flex: 0 1 auto; max-width: 26em; }
.plot { min-width: 760px; min-height: 420px; }
.plotting { max-width: 780px; }
.source { color: #555; font-size: 0.9em; }
.failures li { font-size: 0.85em; margin: 2px 0; }
.failures code { background: #fbeaea; padding: 1px 3px; }
#updated { color: #777; font-size: 0.8em; }
"""

_SCRIPT = r"""
"use strict";
const STATUSES = ["pending", "running", "ok", "failed", "timeout", "invalid", "stored"];
const BASE = window.location.pathname.replace(/\/$/, "");
const plots = {};   // sweep id -> {holder, doc, loading}
let counter = 0;
function text(tag, content, cls) {
  const node = document.createElement(tag);
  if (content !== undefined) node.textContent = content;
  if (cls) node.className = cls;
  return node;
}
function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.round(seconds);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  return m < 60 ? m + " min " + (s % 60) + " s"
    : Math.floor(m / 60) + " h " + (m % 60) + " min";
}
function box(point, grid) {
  const label = point.status === "running" ? "running"
    : (point.text ? point.text : point.status);
  const node = text("span", label, "box " + point.status);
  node.dataset.status = point.status;
  node.dataset.key = point.key;
  node.title = "run " + point.run + ": " + point.status
    + (point.text ? ", median " + grid.metric + " " + point.text + " " + grid.units
       : "");
  return node;
}
function progressLine(grid) {
  const p = grid.progress;
  let line = p.done + " of " + p.total + " points done, " + p.failed + " failed";
  if (p.remaining) line += ", " + p.remaining + " to go";
  if (p.live && p.remaining && p.left_seconds !== null) {
    line += ", about " + duration(p.left_seconds) + " left";
  }
  return text("div", line, "progress");
}
function banner(grid) {
  const p = grid.progress;
  if (p.finished) {
    const took = p.elapsed_seconds !== null ? " in " + duration(p.elapsed_seconds) : "";
    return text("div", "Finished: " + p.total + " points, " + p.failed + " failed"
      + took, "banner " + (p.failed ? "with-failures" : "finished"));
  }
  if (!p.live) {
    return text("div", "Not finished: " + p.remaining + " of " + p.total
      + " points not measured; run the same spec again to measure them",
      "banner stopped");
  }
  return null;
}
function table(grid) {
  const table = text("table");
  const head = text("tr");
  head.appendChild(text("th", grid.row_dims.join(" ") || ""));
  for (const column of grid.columns) {
    head.appendChild(text("th", grid.column_dim
      ? grid.column_dim + " " + column + (grid.column_dim === "bandwidth" ? " %" : "")
      : (grid.metric || "")));
  }
  table.appendChild(head);
  grid.rows.forEach((row, i) => {
    const tr = text("tr");
    tr.appendChild(text("td", row, "row"));
    grid.cells[i].forEach((cell, j) => {
      const td = text("td");
      for (const point of cell) td.appendChild(box(point, grid));
      const median = grid.medians_text[i][j];
      if (median) {
        const node = text("div", "median " + median + " " + grid.units, "median");
        node.dataset.median = median;
        td.appendChild(node);
      }
      tr.appendChild(td);
    });
    table.appendChild(tr);
  });
  return table;
}
function failures(grid) {
  const list = text("ul", undefined, "failures");
  for (const failure of grid.failures) {
    const item = text("li");
    item.appendChild(text("b", failure.label));
    item.appendChild(document.createTextNode(" " + failure.status + ": "));
    item.appendChild(text("code", failure.error));
    list.appendChild(item);
  }
  return list;
}
function column(series, key) {
  return series.map(s => s[key]);
}
function fill(entry, grid) {
  const doc = entry.doc;
  const plot = grid.plot;
  const projection = plot.projection;
  let glyphs = 0, bands = 0;
  const counts = new Set();
  plot.series.forEach((series, i) => {
    const points = doc.get_model_by_name("points-" + i);
    if (!points) return;
    points.data = {nodes: series.points.nodes, value: series.points.value,
                   run: series.points.run};
    doc.get_model_by_name("median-" + i).data = {nodes: series.medians.nodes,
                                                   value: series.medians.value};
    const fitted = projection && projection.series[i];
    doc.get_model_by_name("band-" + i).data = fitted
      ? {nodes: fitted.nodes, lower: fitted.lower, upper: fitted.upper}
      : {nodes: [], lower: [], upper: []};
    doc.get_model_by_name("projection-" + i).data = fitted
      ? {nodes: fitted.nodes, predicted: fitted.predicted} : {nodes: [], predicted: []};
    glyphs += points.data.nodes.length;
    if (doc.get_model_by_name("band-" + i).data.nodes.length) bands += 1;
    for (const n of series.points.nodes) counts.add(n);
  });
  const box = doc.get_model_by_name("extrapolated");
  if (box && bands && plot.largest_nodes !== null) {
    box.left = plot.largest_nodes;
    box.visible = true;
  }
  entry.holder.dataset.glyphs = glyphs;
  entry.holder.dataset.bands = bands;
  entry.holder.dataset.nodeCounts = counts.size;
  entry.note.textContent = projection && bands
    ? "dashed: live projection (" + projection.model + "), shaded: its "
      + Math.round(projection.level * 100) + " % band; grey: beyond the largest "
      + "measured node count. A preview: scaleprobe fit gives the verdict."
    : "the live projection appears once a series has three node counts";
}
async function embed(entry, grid) {
  entry.loading = true;
  try {
    const response = await fetch(BASE + "/plot.json?sweep="
      + encodeURIComponent(grid.id), {cache: "no-store"});
    const item = await response.json();
    const before = Bokeh.documents.length;
    const views = await Bokeh.embed.embed_item(item, entry.holder.id);
    // a view manager (Bokeh 3) or an array of views: either way, its first root
    const roots = views && views.roots ? [...views.roots] : [...(views || [])];
    entry.doc = roots.length ? roots[0].model.document : Bokeh.documents[before];
  } catch (error) {
    entry.holder.dataset.error = String(error);
  }
  entry.loading = false;
}
function plotFor(grid) {
  let entry = plots[grid.id];
  if (!entry) {
    const wrapper = text("div", undefined, "plotting");
    const holder = text("div", undefined, "plot");
    holder.id = "plot-" + (counter++);
    holder.dataset.sweep = grid.id;
    const note = text("div", "", "note");
    wrapper.appendChild(holder);
    wrapper.appendChild(note);
    entry = plots[grid.id] = {wrapper, holder, note, doc: null, loading: false};
  }
  return entry;
}
function adaptive(record) {
  // An adaptive campaign: the interval at its target, round by round.
  const block = text("div", undefined, "adaptive");
  block.appendChild(text("h3", "Interval at " + record.target + " by round (goal: "
    + "width <= " + record.goal + ")"));
  const table = text("table");
  const head = text("tr");
  for (const name of ["round", "width", "lower", "upper", "spent", "points",
      "note"]) {
    head.appendChild(text("th", name));
  }
  table.appendChild(head);
  record.rounds.forEach((row, i) => {
    const tr = text("tr");
    tr.dataset.width = row.width;
    for (const cell of [i + 1, row.width.toPrecision(3) + "x",
        row.lower.toPrecision(4), row.upper.toPrecision(4), duration(row.spent),
        row.points, row.note || ""]) {
      tr.appendChild(text("td", String(cell)));
    }
    table.appendChild(tr);
  });
  block.appendChild(table);
  return block;
}
function sweep(grid) {
  const section = text("section");
  section.className = "sweep";
  section.dataset.sweep = grid.id;
  section.dataset.finished = grid.progress.finished;
  section.appendChild(text("h2", grid.name + " (" + grid.total + " points)"));
  if (grid.source) section.appendChild(text("div", grid.source, "source"));
  section.appendChild(progressLine(grid));
  const finished = banner(grid);
  if (finished) section.appendChild(finished);
  const legend = text("div", undefined, "legend");
  for (const status of STATUSES) {
    if (grid.counts[status]) {
      legend.appendChild(text("span", status + " " + grid.counts[status],
                              "box " + status));
    }
  }
  section.appendChild(legend);
  if (grid.progress.live && !grid.progress.finished) {
    const running = text("div", undefined, "note");
    running.id = "running-" + grid.id;
    running.textContent = grid.running.length
      ? "running: " + grid.running.map(r => r.label + " for "
        + r.elapsed.toFixed(1) + " s").join("; ")
      : "no launch running";
    section.appendChild(running);
  }
  const layout = text("div", undefined, "layout");
  const left = text("div", undefined, "grid");
  left.appendChild(table(grid));
  if (grid.metric) {
    left.appendChild(text("div", "values: median " + grid.metric + " (" + grid.units
      + ") over runs and trials, as scaleprobe show prints it; a box is one run "
      + "(its median over trials)", "note"));
  }
  layout.appendChild(left);
  if (grid.plot.series.length) layout.appendChild(plotFor(grid).wrapper);
  section.appendChild(layout);
  if (grid.adaptive) section.appendChild(adaptive(grid.adaptive));
  if (grid.failures.length) {
    section.appendChild(text("h3", "Failed points"));
    section.appendChild(failures(grid));
  }
  return section;
}
async function refresh() {
  try {
    const response = await fetch(BASE + "/data.json", {cache: "no-store"});
    const data = await response.json();
    const target = document.getElementById("sweeps");
    if (data.sweeps.length) target.replaceChildren(...data.sweeps.map(sweep));
    for (const grid of data.sweeps) {
      const entry = plots[grid.id];
      if (!entry || !grid.plot.series.length) continue;
      if (!entry.doc && !entry.loading) await embed(entry, grid);
      if (entry.doc) fill(entry, grid);
    }
    document.getElementById("dask").hidden = !data.dask;
    document.getElementById("updated").textContent =
      "updated " + new Date(data.time * 1000).toLocaleTimeString();
  } catch (error) {
    document.getElementById("updated").textContent = "no connection: " + error;
  }
}
refresh();
setInterval(refresh, 1000);
"""

#: The sweep page.
PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>scaleprobe sweeps</title>
<script src="scaleprobe/static/js/bokeh.min.js"></script>
<style>{_STYLE}</style>
</head>
<body>
<h1>scaleprobe sweeps</h1>
<div><span id="dask"><a href="status">Dask status</a> &middot; </span>
<span id="updated">waiting for data</span></div>
<div id="sweeps"><p>No sweep has run on this cluster yet.</p></div>
<script>{_SCRIPT}</script>
</body>
</html>
"""
