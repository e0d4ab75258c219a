"""Lay the points of a sweep out as the grid the sweep page draws."""

from __future__ import annotations

import itertools

__all__ = ["STATUSES", "sweep_grid"]

#: Point statuses the page colours; ``stored`` points were finished by an earlier run.
STATUSES = ("pending", "running", "ok", "failed", "timeout", "invalid", "stored")
COLUMN_DIM = "bandwidth"
CELL_DIM = "run"


def _label(dims: list[str], values: tuple) -> str:
    return " ".join(f"{d}={v}" for d, v in zip(dims, values, strict=True)) or "all"


def _pick(dims: list[str], values: tuple, shown: list[str]) -> tuple:
    return tuple(v for d, v in zip(dims, values, strict=True) if d in shown)


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
    row_index = {values: i for i, values in enumerate(rows)}
    column_index = {value: j for j, value in enumerate(columns)}
    cells = [[[] for _ in columns] for _ in rows]
    counts = dict.fromkeys(STATUSES, 0)
    running = []
    for key, point in state["points"].items():
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
