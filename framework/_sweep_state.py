"""What the sweep page knows of a sweep, and what it shows: pure data, no server.

A sweep's state is built from the runner's events (:func:`apply_event`) or from a
results store (:func:`state_from_store`); :func:`sweep_view` turns it into what the
page draws: the grid of points by status, the progress (done, failed, time left, a
finished banner), the failed points with their error, and the plot's series.

The values are the ones ``scaleprobe show`` prints: a point's values are its metric
as the store holds it (the trials' values when the kernel reports trials, else the
run's), a box shows a run's median over its trials, a cell (and the plot's line)
the median over all runs and trials of a configuration.
"""

from __future__ import annotations

import itertools
import math
import statistics

__all__ = [
    "CELL_DIM",
    "COLUMN_DIM",
    "FAILED",
    "STATUSES",
    "apply_event",
    "done_event",
    "plan_event",
    "point_values",
    "series_data",
    "state_from_store",
    "sweep_grid",
    "sweep_view",
]

#: Point statuses the page colours; ``stored`` points were finished by an earlier run.
STATUSES = ("pending", "running", "ok", "failed", "timeout", "invalid", "stored")
#: Statuses of a point that ended without a measurement to trust.
FAILED = ("failed", "timeout", "invalid")
COLUMN_DIM = "bandwidth"
CELL_DIM = "run"
#: The plot's horizontal axis.
NODES_DIM = "nodes"
#: Longest error text kept per failed point.
ERROR_CHARS = 300


def _finite(values) -> list[float]:
    out = []
    for value in values:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and math.isfinite(value):
            out.append(float(value))
    return out


def point_values(result: dict, metric: str = "time") -> list[float]:
    """The values of ``metric`` a finished point adds to the store.

    Parameters
    ----------
    result : dict
        A launch's result (``record`` with ``metrics`` and ``trials``).
    metric : str, default="time"

    Returns
    -------
    list of float
        The trials' values when the kernel reports ``metric`` per trial (the store
        keeps the run's own value as ``run_<metric>`` then), else the run's value;
        empty without a record.

    Examples
    --------
    >>> record = {"metrics": {"time": 1.0}, "trials": [{"time": 0.4}, {"time": 0.6}]}
    >>> point_values({"record": record})
    [0.4, 0.6]
    >>> point_values({"record": {"metrics": {"time": 2.0}}})
    [2.0]
    """
    record = result.get("record") or {}
    trials = record.get("trials") or []
    if any(metric in trial for trial in trials):
        return _finite(trial.get(metric) for trial in trials)
    return _finite([(record.get("metrics") or {}).get(metric)])


def done_event(sweep: str, key: str, result: dict, now: float) -> dict:
    """The event that tells the page a point ended.

    Parameters
    ----------
    sweep, key : str
        The sweep's and the point's identifiers.
    result : dict
        The launch's result.
    now : float
        Epoch seconds.

    Returns
    -------
    dict
        ``kind="done"``, ``status``, ``values`` (:func:`point_values`), ``units``
        and the first line of ``error``.
    """
    record = result.get("record") or {}
    return {
        "kind": "done",
        "sweep": sweep,
        "key": key,
        "status": result.get("status"),
        "values": point_values(result),
        "units": (record.get("units") or {}).get("time", "s"),
        "error": _first_line(result.get("error")),
        "time": now,
    }


def plan_event(sweep: str, name: str, dims: dict, points, pending, stored=()) -> dict:
    """The event that puts a sweep on the page, with what earlier runs stored.

    Parameters
    ----------
    sweep, name : str
        The sweep's identifier and its name.
    dims : dict
        Sweep key to its values, in spec order.
    points : iterable of (str, dict)
        Every point of the plan: its key and coordinates.
    pending : set of str
        The keys this run measures.
    stored : iterable of dict, default=()
        The results an earlier run stored: their values and errors are shown (a
        resumed sweep's plot starts with them).

    Returns
    -------
    dict
        ``kind="plan"``; each point ``pending`` or ``stored`` (or the failed status
        it was stored with), with its ``values`` and ``error``.

    Examples
    --------
    >>> stored = [{"key": "a", "status": "ok", "record": {"metrics": {"time": 2.0}}}]
    >>> event = plan_event("s", "pp", {"nodes": [1, 2]},
    ...                    [("a", {"nodes": 1}), ("b", {"nodes": 2})], {"b"}, stored)
    >>> [(p["key"], p["status"], p.get("values")) for p in event["points"]]
    [('a', 'stored', [2.0]), ('b', 'pending', None)]
    """
    earlier = {result["key"]: result for result in stored}
    shown = []
    for key, coords in points:
        entry = {"key": key, "coords": coords, "status": "stored"}
        result = None if key in pending else earlier.get(key)
        if key in pending:
            entry["status"] = "pending"
        elif result is not None:
            entry["values"] = point_values(result)
            entry["error"] = _first_line(result.get("error"))
            if result.get("status") in FAILED:
                entry["status"] = result["status"]
        shown.append(entry)
    return {
        "kind": "plan",
        "sweep": sweep,
        "name": name,
        "metric": "time",
        "dims": dims,
        "points": shown,
    }


def _first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0][:ERROR_CHARS] if lines else ""


def _median(values):
    return statistics.median(values) if values else None


def _text(value) -> str:
    """A value as ``scaleprobe show`` prints it (four significant digits)."""
    return "" if value is None else f"{value:.4g}"


def _new_point(coords: dict, status: str) -> dict:
    return {
        "coords": coords,
        "status": status,
        "values": [],
        "value": None,
        "error": "",
        "started": None,
        "finished": None,
    }


def _planned_point(entry: dict) -> dict:
    """A point of a plan event, with the values an earlier run stored, if any."""
    status = entry.get("status", "pending")
    point = _new_point(entry["coords"], status if status in STATUSES else "failed")
    point["values"] = _finite(entry.get("values") or [])
    point["value"] = _median(point["values"])
    point["error"] = _first_line(entry.get("error"))
    return point


def apply_event(sweeps: dict, msg: dict, now: float) -> None:
    """Apply one event of the runner to ``sweeps`` (sweep id -> state), in place.

    Kinds: ``plan`` (the points of a sweep), ``start`` (a launch began) and
    ``done`` (it ended: ``status``, ``values`` or a single ``value``, ``units``,
    ``error``). Events of unknown sweeps or points are ignored.
    """
    kind, sweep = msg.get("kind"), msg.get("sweep")
    if kind == "plan":
        sweeps.pop(sweep, None)  # a resumed sweep starts a new page
        sweeps[sweep] = {
            "name": str(msg.get("name", sweep)),
            "metric": msg.get("metric"),
            "units": msg.get("units", "s"),
            "dims": dict(msg["dims"]),
            "planned": now,
            "points": {p["key"]: _planned_point(p) for p in msg["points"]},
        }
        return
    state = sweeps.get(sweep)
    point = state["points"].get(msg.get("key")) if state else None
    if point is None:
        return
    if kind == "start":
        point.update(status="running", started=float(msg["time"]))
    elif kind == "done":
        status = msg.get("status")
        values = msg.get("values")
        values = _finite(values if values is not None else [msg.get("value")])
        point.update(
            status=status if status in STATUSES else "failed",
            values=values,
            value=_median(values),
            error=_first_line(msg.get("error")),
            finished=float(msg.get("time", now)),
        )
        state["units"] = msg.get("units", state.get("units", "s"))


# ---------------------------------------------------------------- from a store


def _python(value):
    """A coordinate value as JSON takes it (numpy scalars to Python)."""
    return value.item() if hasattr(value, "item") else value


def state_from_store(ds, metric: str = "time") -> dict:
    """The state of a sweep whose results are in a store.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results (:func:`scaleprobe.framework.open_results`).
    metric : str, default="time"

    Returns
    -------
    dict
        The state :func:`sweep_view` reads: every point of the store with its
        status (``pending`` where the spec it keeps has a point not measured),
        values and error.
    """
    from ._summary import spec_cells

    dims = list(ds["status"].dims)
    axes = {d: [_python(v) for v in ds[d].values] for d in dims}
    has_metric = metric in ds.data_vars
    cells = spec_cells(ds)
    points = {}
    for index in itertools.product(*(range(len(axes[d])) for d in dims)):
        where = dict(zip(dims, index, strict=True))
        coords = {d: axes[d][i] for d, i in where.items()}
        status = str(ds["status"][where].item()) or "pending"
        unasked = cells is not None and tuple(coords.values()) not in cells
        if status == "pending" and unasked:
            continue  # a cell of the grid no spec of the store asks for
        point = _new_point(coords, status if status in STATUSES else "failed")
        if has_metric:
            point["values"] = _finite(ds[metric][where].values.ravel().tolist())
            point["value"] = _median(point["values"])
        if "error" in ds.data_vars:
            point["error"] = _first_line(ds["error"][where].item())
        points[" ".join(f"{d}={v}" for d, v in coords.items())] = point
    units = ds[metric].attrs.get("units", "") if has_metric else ""
    return {
        "name": str(ds.attrs.get("title", "results")),
        "metric": metric if has_metric else None,
        "units": units,
        "dims": axes,
        "planned": None,
        "points": points,
    }


# ------------------------------------------------------------------ the grid


def _label(dims: list[str], values: tuple) -> str:
    return " ".join(f"{d}={v}" for d, v in zip(dims, values, strict=True)) or "all"


def _pick(dims: list[str], values: tuple, shown: list[str]) -> tuple:
    return tuple(v for d, v in zip(dims, values, strict=True) if d in shown)


def _place_points(points: dict, rows, columns, row_dims, column_dim, now):
    """Each point into its cell, runs in order; counts by status; launches running;
    every value of each cell."""
    row_index = {values: i for i, values in enumerate(rows)}
    column_index = {value: j for j, value in enumerate(columns)}
    cells = [[[] for _ in columns] for _ in rows]
    values = [[[] for _ in columns] for _ in rows]
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
                "text": _text(point.get("value")),
                "run": coords.get(CELL_DIM),
            }
        )
        values[i][j] += point.get("values") or []
        if status == "running" and point.get("started") is not None:
            label = " ".join(f"{d}={v}" for d, v in coords.items())
            elapsed = round(max(0.0, now - point["started"]), 1)
            running.append({"key": key, "label": label, "elapsed": elapsed})
    for row in cells:
        for cell in row:
            cell.sort(key=lambda p: (p["run"] is None, p["run"]))
    medians = [[_median(cell) for cell in row] for row in values]
    return cells, counts, running, medians


def sweep_grid(sweep_id: str, state: dict, now: float) -> dict:
    """Return the grid of one sweep: rows x ``bandwidth`` columns, runs inside a cell.

    Parameters
    ----------
    sweep_id : str
        The sweep's identifier.
    state : dict
        ``name``, ``metric``, ``dims`` (dim to values, in spec order) and ``points``
        (key to ``coords``, ``status``, ``value``, ``values``, ``started``).
    now : float
        Current time, epoch seconds.

    Returns
    -------
    dict
        ``id``, ``name``, ``metric``, ``units``, ``total``, ``counts`` (points per
        status), ``row_dims`` and ``rows`` (labels of the combinations of every dim
        but ``bandwidth`` and ``run``; dims with one value are left out of the
        labels), ``column_dim`` and ``columns``, ``cells`` (``cells[row][column]``
        is a list of ``{"key", "status", "value", "text", "run"}`` ordered by run,
        ``value`` the run's median and ``text`` it printed), ``medians``
        (``medians[row][column]``: the median over every run and trial of the
        cell, or None), ``medians_text`` (as ``scaleprobe show`` prints them)
        and ``running`` (``{"key", "label", "elapsed"}`` of each launch under way).

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
    cells, counts, running, medians = _place_points(
        state["points"], rows, columns, row_dims, column_dim, now
    )
    return {
        "id": sweep_id,
        "name": state["name"],
        "metric": state.get("metric"),
        "units": state.get("units", ""),
        "total": len(state["points"]),
        "counts": counts,
        "row_dims": shown,
        "rows": [_label(shown, _pick(row_dims, r, shown)) for r in rows],
        "column_dim": column_dim,
        "columns": columns,
        "cells": cells,
        "medians": medians,
        "medians_text": [[_text(m) for m in row] for row in medians],
        "running": running,
    }


# ---------------------------------------------------------- progress and failures


def _progress(state: dict, counts: dict, now: float) -> dict:
    """Done, failed, remaining, the time left and whether the sweep is finished."""
    total = sum(counts.values())
    remaining = counts.get("pending", 0) + counts.get("running", 0)
    failed = sum(counts.get(s, 0) for s in FAILED)
    ended = [p["finished"] for p in state["points"].values() if p.get("finished")]
    planned = state.get("planned")
    left = elapsed = None
    if planned is not None and ended:
        elapsed = max(ended) - planned
        left = elapsed / len(ended) * remaining if remaining else 0.0
        if remaining:
            elapsed = now - planned
    live = planned is not None
    return {
        "total": total,
        "done": total - remaining,
        "failed": failed,
        "remaining": remaining,
        "left_seconds": None if left is None else round(left, 1),
        "elapsed_seconds": None if elapsed is None else round(elapsed, 1),
        "finished": total > 0 and remaining == 0,
        "live": live,
    }


def _failures(state: dict) -> list[dict]:
    """The failed points: their coordinates, status and the first line of error."""
    return [
        {
            "label": " ".join(f"{d}={v}" for d, v in point["coords"].items()),
            "status": point["status"],
            "error": point.get("error") or "(no error text)",
        }
        for point in state["points"].values()
        if point["status"] in FAILED
    ]


# ------------------------------------------------------------------ the plot


def _series_dims(dims: dict) -> list[str]:
    return [d for d in dims if d not in (NODES_DIM, CELL_DIM) and len(dims[d]) > 1]


def _series_label(names: list[str], values: tuple) -> str:
    parts = [
        f"bw {v:g} %" if d == COLUMN_DIM and isinstance(v, (int, float)) else f"{d} {v}"
        for d, v in zip(names, values, strict=True)
    ]
    return ", ".join(parts) or "measured"


def series_data(state: dict) -> list[dict]:
    """The plot's series: one per bandwidth (and per value of any other swept dim).

    Parameters
    ----------
    state : dict
        A sweep's state.

    Returns
    -------
    list of dict
        ``label``, ``points`` (``nodes``, ``value`` (the run's median), ``run``,
        one per point with values), ``medians`` (``nodes``, ``value``: the median
        over every run and trial per node count) and ``values`` (``nodes``,
        ``run``, ``value``: every value, for a fit). Empty without a ``nodes`` dim.
    """
    dims = state["dims"]
    if NODES_DIM not in dims:
        return []
    names = _series_dims(dims)
    series = []
    for combination in itertools.product(*(dims[d] for d in names)):
        where = dict(zip(names, combination, strict=True))
        chosen = [
            p
            for p in state["points"].values()
            if p["values"] and all(p["coords"].get(d) == v for d, v in where.items())
        ]
        chosen.sort(key=lambda p: (p["coords"][NODES_DIM], p["coords"].get(CELL_DIM)))
        by_nodes = {}
        for p in chosen:
            by_nodes.setdefault(p["coords"][NODES_DIM], []).extend(p["values"])
        series.append(
            {
                "label": _series_label(names, combination),
                "points": {
                    "nodes": [p["coords"][NODES_DIM] for p in chosen],
                    "value": [p["value"] for p in chosen],
                    "run": [p["coords"].get(CELL_DIM) for p in chosen],
                },
                "medians": {
                    "nodes": list(by_nodes),
                    "value": [_median(v) for v in by_nodes.values()],
                },
                "values": [
                    (p["coords"][NODES_DIM], p["coords"].get(CELL_DIM, 0), value)
                    for p in chosen
                    for value in p["values"]
                ],
            }
        )
    return series


def sweep_view(sweep_id: str, state: dict, now: float) -> dict:
    """Everything the page shows of one sweep.

    Parameters
    ----------
    sweep_id : str
    state : dict
        A sweep's state (events applied, or :func:`state_from_store`); its
        ``projection`` (from :mod:`scaleprobe.framework._sweep_plot`), if any.
    now : float
        Epoch seconds.

    Returns
    -------
    dict
        :func:`sweep_grid`'s keys, plus ``source`` (where the state was read, or
        ''), ``adaptive`` (an adaptive campaign's rounds, or None), ``progress``
        (``total``, ``done``, ``failed``, ``remaining``, ``left_seconds``,
        ``elapsed_seconds``, ``finished``, ``live``), ``failures`` (``label``,
        ``status``, ``error``) and ``plot`` (``series`` without their raw values,
        ``projection``).
    """
    grid = sweep_grid(sweep_id, state, now)
    grid["source"] = state.get("source", "")
    grid["adaptive"] = state.get("adaptive")
    grid["progress"] = _progress(state, grid["counts"], now)
    grid["failures"] = _failures(state)
    series = [{k: v for k, v in s.items() if k != "values"} for s in series_data(state)]
    grid["plot"] = {
        "series": series,
        "projection": state.get("projection"),
        "largest_nodes": max(
            (n for s in series for n in s["points"]["nodes"]), default=None
        ),
    }
    return grid
