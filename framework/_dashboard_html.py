"""The sweep page: one self-contained HTML document that polls ``data.json``."""

__all__ = ["PAGE"]

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>scaleprobe sweeps</title>
<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin: 1.2em 0 0.3em; }
a { color: #1f77b4; }
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
.running-list { margin: 0.3em 0; font-size: 0.9em; }
#updated { color: #777; font-size: 0.8em; }
</style>
</head>
<body>
<h1>scaleprobe sweeps</h1>
<div><a href="status">Dask status</a> &middot;
<span id="updated">waiting for data</span></div>
<div id="sweeps"><p>No sweep has run on this cluster yet.</p></div>
<script>
"use strict";
const STATUSES = ["pending", "running", "ok", "failed", "timeout", "invalid", "stored"];
function text(tag, content, cls) {
  const node = document.createElement(tag);
  if (content !== undefined) node.textContent = content;
  if (cls) node.className = cls;
  return node;
}
function number(value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "number") return String(value);
  return Math.abs(value) >= 1e4 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(2) : value.toPrecision(3);
}
function box(point, metric) {
  const label = point.status === "running" ? "running"
    : (point.value !== null && point.value !== undefined ? number(point.value)
       : point.status);
  const node = text("span", label, "box " + point.status);
  node.dataset.status = point.status;
  node.dataset.key = point.key;
  node.title = "run " + point.run + ": " + point.status
    + (point.value !== null && point.value !== undefined
       ? ", " + metric + " = " + point.value : "");
  return node;
}
function sweep(grid) {
  const section = text("section");
  section.className = "sweep";
  section.dataset.sweep = grid.id;
  section.appendChild(text("h2", grid.name + " (" + grid.total + " points)"));
  const legend = text("div", undefined, "legend");
  for (const status of STATUSES) {
    if (grid.counts[status]) {
      legend.appendChild(text("span", status + " " + grid.counts[status],
                              "box " + status));
    }
  }
  section.appendChild(legend);
  const running = text("div", undefined, "running-list");
  running.id = "running-" + grid.id;
  running.textContent = grid.running.length
    ? "running: " + grid.running.map(r => r.label + " for " + r.elapsed.toFixed(1)
      + " s").join("; ")
    : "no launch running";
  section.appendChild(running);
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
    grid.cells[i].forEach(cell => {
      const td = text("td");
      for (const point of cell) td.appendChild(box(point, grid.metric));
      tr.appendChild(td);
    });
    table.appendChild(tr);
  });
  section.appendChild(table);
  if (grid.metric) {
    section.appendChild(text("div", "values: latest " + grid.metric + " of each point",
                             "running-list"));
  }
  return section;
}
async function refresh() {
  try {
    const base = window.location.pathname.replace(/\\/$/, "");
    const response = await fetch(base + "/data.json", {cache: "no-store"});
    const data = await response.json();
    const target = document.getElementById("sweeps");
    if (data.sweeps.length) {
      target.replaceChildren(...data.sweeps.map(sweep));
    }
    document.getElementById("updated").textContent =
      "updated " + new Date(data.time * 1000).toLocaleTimeString();
  } catch (error) {
    document.getElementById("updated").textContent = "no connection: " + error;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
"""
