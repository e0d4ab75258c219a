"""A sweep page on the Dask dashboard: every point of a sweep, coloured by status.

:class:`SweepPage` is a scheduler plugin. Registered on a cluster, it serves
``/scaleprobe`` (the page) and ``/scaleprobe/data.json`` (what the page shows) from
the scheduler's own dashboard server, next to ``/status``. It learns about sweeps
from events on the topic :data:`TOPIC`: the runner logs the plan and each finished
point from the client, and the task that runs a point logs when its launch starts. The
page polls the data every second, so it follows a running sweep live.

>>> from distributed import Client                     # doctest: +SKIP
>>> link = attach_sweep_page(Client())                  # doctest: +SKIP
>>> link                                                # doctest: +SKIP
'http://127.0.0.1:8787/scaleprobe'
"""

from __future__ import annotations

import itertools
import json
import time

from distributed.comm import get_address_host
from distributed.diagnostics.plugin import SchedulerPlugin
from tornado import web

__all__ = [
    "TOPIC",
    "SweepPage",
    "attach_sweep_page",
    "dashboard_root",
    "sweep_grid",
    "sweep_page_link",
]

#: Event topic of sweep progress.
TOPIC = "scaleprobe-sweep"
ROUTE = "/scaleprobe"


#: Point statuses the page colours; ``stored`` points were finished by an earlier run.
STATUSES = ("pending", "running", "ok", "failed", "timeout", "invalid", "stored")
COLUMN_DIM = "bandwidth"
CELL_DIM = "run"


def _label(dims: list[str], values: tuple) -> str:
    return " ".join(f"{d}={v}" for d, v in zip(dims, values, strict=True)) or "all"


def _pick(dims: list[str], values: tuple, shown: list[str]) -> tuple:
    return tuple(v for d, v in zip(dims, values, strict=True) if d in shown)


def _place_points(points: dict, rows, columns, row_dims, column_dim, now):
    """Each point into its cell, runs in order; counts by status; launches running."""
    row_index = {values: i for i, values in enumerate(rows)}
    column_index = {value: j for j, value in enumerate(columns)}
    cells = [[[] for _ in columns] for _ in rows]
    counts = dict.fromkeys(STATUSES, 0)
    running = []
    for key, point in points.items():
        coords = point["coords"]
        status = point["status"]
        counts[status] = counts.get(status, 0) + 1
        i = row_index.get(tuple(coords.get(d) for d in row_dims))
        j = column_index.get(coords.get(column_dim) if column_dim else None)
        if i is None or j is None:
            continue
        cells[i][j].append(
            {
                "key": key,
                "status": status,
                "value": point.get("value"),
                "run": coords.get(CELL_DIM),
            }
        )
        if status == "running" and point.get("started") is not None:
            label = " ".join(f"{d}={v}" for d, v in coords.items())
            elapsed = round(max(0.0, now - point["started"]), 1)
            running.append({"key": key, "label": label, "elapsed": elapsed})
    for row in cells:
        for cell in row:
            cell.sort(key=lambda p: (p["run"] is None, p["run"]))
    return cells, counts, running


def sweep_grid(sweep_id: str, state: dict, now: float) -> dict:
    """Return the grid of one sweep: rows x ``bandwidth`` columns, runs inside a cell.

    Parameters
    ----------
    sweep_id : str
        The sweep's identifier.
    state : dict
        ``name``, ``metric``, ``dims`` (dim to values, in spec order) and ``points``
        (key to ``coords``, ``status``, ``value``, ``started``).
    now : float
        Current time, epoch seconds.

    Returns
    -------
    dict
        ``id``, ``name``, ``metric``, ``total``, ``counts`` (points per status),
        ``row_dims`` and ``rows`` (labels of the combinations of every dim but
        ``bandwidth`` and ``run``; dims with one value are left out of the labels),
        ``column_dim`` and ``columns``, ``cells`` (``cells[row][column]`` is a list of
        ``{"key", "status", "value", "run"}`` ordered by run) and ``running``
        (``{"key", "label", "elapsed"}`` of each launch under way).

    Examples
    --------
    >>> state = {"name": "pp", "metric": "time",
    ...          "dims": {"nodes": [1, 2], "bandwidth": [100, 10], "run": [0]},
    ...          "points": {"a": {"coords": {"nodes": 2, "bandwidth": 10, "run": 0},
    ...                           "status": "running", "value": None, "started": 5.0}}}
    >>> grid = sweep_grid("s", state, now=7.5)
    >>> grid["rows"], grid["columns"], grid["running"]
    (['nodes=1', 'nodes=2'], [100, 10], [{'key': 'a', 'label': 'nodes=2 bandwidth=10 \
run=0', 'elapsed': 2.5}])
    """
    dims = state["dims"]
    column_dim = COLUMN_DIM if COLUMN_DIM in dims else None
    row_dims = [d for d in dims if d not in (COLUMN_DIM, CELL_DIM)]
    shown = [d for d in row_dims if len(dims[d]) > 1]
    rows = list(itertools.product(*(dims[d] for d in row_dims)))
    columns = list(dims[column_dim]) if column_dim else [None]
    cells, counts, running = _place_points(
        state["points"], rows, columns, row_dims, column_dim, now
    )
    return {
        "id": sweep_id,
        "name": state["name"],
        "metric": state.get("metric"),
        "total": len(state["points"]),
        "counts": counts,
        "row_dims": shown,
        "rows": [_label(shown, _pick(row_dims, r, shown)) for r in rows],
        "column_dim": column_dim,
        "columns": columns,
        "cells": cells,
        "running": running,
    }


# ---------------------------------------------------------------- the page

#: The sweep page: one self-contained HTML document that polls ``data.json``.
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


class _PageHandler(web.RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(PAGE)


class _DataHandler(web.RequestHandler):
    def initialize(self, page):
        self.page = page

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps(self.page.data()))


class SweepPage(SchedulerPlugin):
    """Scheduler plugin that keeps the state of sweeps and serves their page.

    Events (dicts on :data:`TOPIC`, each with ``sweep``, an identifier):

    - ``{"kind": "plan", "name", "metric", "dims": {dim: values}, "points":
      [{"key", "coords", "status"}]}`` -- the points of a sweep (``status`` ``pending``,
      or ``stored`` for points an earlier run finished);
    - ``{"kind": "start", "key", "time"}`` -- a point's launch began;
    - ``{"kind": "done", "key", "status", "value", "time"}`` -- it ended.

    Attributes
    ----------
    sweeps : dict
        State per sweep identifier, newest last.
    """

    name = "scaleprobe-sweep-page"
    idempotent = True  # registered again, the first instance and its sweeps stay

    def __init__(self):
        self.sweeps: dict = {}

    async def start(self, scheduler) -> None:
        """Mount the page's routes on the scheduler's dashboard server, if any."""
        application = getattr(scheduler, "http_application", None)
        if application is not None:
            application.add_handlers(
                ".*$",
                [
                    (ROUTE, _PageHandler),
                    (ROUTE + "/data.json", _DataHandler, {"page": self}),
                ],
            )

    def log_event(self, topic: str, msg) -> None:
        """Apply a sweep event (other topics are ignored)."""
        if topic == TOPIC and isinstance(msg, dict):
            self.apply(msg)

    def apply(self, msg: dict) -> None:
        """Apply one event to the state (see the class docstring for the kinds)."""
        kind, sweep = msg.get("kind"), msg.get("sweep")
        if kind == "plan":
            self.sweeps.pop(sweep, None)  # a resumed sweep starts a new page
            self.sweeps[sweep] = {
                "name": str(msg.get("name", sweep)),
                "metric": msg.get("metric"),
                "dims": dict(msg["dims"]),
                "points": {
                    p["key"]: {
                        "coords": p["coords"],
                        "status": p.get("status", "pending"),
                        "value": None,
                        "started": None,
                    }
                    for p in msg["points"]
                },
            }
            return
        state = self.sweeps.get(sweep)
        point = state["points"].get(msg.get("key")) if state else None
        if point is None:
            return
        if kind == "start":
            point.update(status="running", started=float(msg["time"]))
        elif kind == "done":
            status = msg.get("status")
            point.update(
                status=status if status in STATUSES else "failed",
                value=msg.get("value"),
                finished=float(msg.get("time", 0.0)),
            )

    def data(self, now: float | None = None) -> dict:
        """Return what the page shows: one grid per sweep, newest first.

        Parameters
        ----------
        now : float, optional
            The current time (epoch seconds), for the elapsed time of running launches.

        Returns
        -------
        dict
            ``{"time": now, "sweeps": [grid, ...]}``; see
            :func:`sweep_grid` for a grid.
        """
        now = time.time() if now is None else now
        grids = [
            sweep_grid(sweep_id, state, now)
            for sweep_id, state in reversed(self.sweeps.items())
        ]
        return {"time": now, "sweeps": grids}


def dashboard_root(client) -> str | None:
    """Return ``http://HOST:PORT`` where the scheduler's dashboard listens, or None.

    Dask's own link names the host of the scheduler's address, but a dashboard bound
    to loopback (scaleprobe's default) does not answer there when the scheduler
    listens on another interface, as under dask-mpi; the host is taken from the
    address the dashboard server was bound to instead, and only a server bound to
    every interface is named by the scheduler's host.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.

    Returns
    -------
    str or None
        The root of the dashboard, or None if the scheduler has none.
    """
    bound = client.run_on_scheduler(
        lambda dask_scheduler: (
            (getattr(server, "address", ""), server.port)
            if (server := dask_scheduler.services.get("dashboard")) is not None
            else None
        )
    )
    if bound is None:
        return None
    host, port = bound
    if host in ("", "0.0.0.0", "::"):
        host = get_address_host(client.scheduler.address)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def sweep_page_link(client) -> str | None:
    """Return the address of the sweep page of ``client``'s cluster, or None."""
    root = dashboard_root(client)
    return None if root is None else root + ROUTE


def attach_sweep_page(client) -> str | None:
    """Register the sweep page on ``client``'s scheduler; return its address.

    Registering twice keeps the first plugin and its sweeps.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.

    Returns
    -------
    str or None
        ``http://HOST:PORT/scaleprobe``, or None if the scheduler has no dashboard.
    """
    client.register_plugin(SweepPage())
    return sweep_page_link(client)
