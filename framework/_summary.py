"""Plain-text summaries of a results Dataset, for ``scaleprobe show``, ``run`` and the
demo: the table of a metric, the points that failed and why, in one place."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = [
    "error_line",
    "failure_line",
    "failures_of",
    "metric_error",
    "spec_cells",
    "summarize",
]

#: Variables of a results Dataset that describe points rather than measure them.
_NOT_METRICS = ("status", "error")


def _status_counts(ds: xr.Dataset) -> dict:
    values, counts = np.unique(ds["status"].values, return_counts=True)
    pairs = zip(values, counts, strict=True)
    return {str(v) if v else "not run": int(c) for v, c in pairs}


def spec_cells(ds: xr.Dataset):
    """The cells of the grid that are points of the spec a store keeps.

    A campaign extended by ``suggest`` keeps its last spec, and its grid (the
    product of every count and run measured) has cells no spec asked for.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results.

    Returns
    -------
    set of tuple or None
        The coordinates of each point, in the order of the dimensions of
        ``status``; None when the Dataset keeps no spec that loads.
    """
    from .planning import plan
    from .spec import SpecError, load_spec

    text = ds.attrs.get("spec")
    if not text or "status" not in ds:
        return None
    try:
        points = plan(load_spec(text.rstrip("\n") + "\n"))
    except (SpecError, ValueError):
        return None
    dims = ds["status"].dims
    return {tuple(p.coords.get(d) for d in dims) for p in points}


def _outside_the_spec(ds: xr.Dataset, counts: dict) -> int:
    """How many empty cells of the grid are no point of the stored spec, taken
    out of ``counts["not run"]`` (which then counts the spec's points not run);
    0 when the Dataset keeps no spec to tell."""
    cells = spec_cells(ds) if counts.get("not run") else None
    if cells is None:
        return 0
    status = ds["status"]
    axes = [ds[d].values.tolist() for d in status.dims]
    empty = [
        tuple(axes[i][j] for i, j in enumerate(cell))
        for cell in np.argwhere(status.values == "")
    ]
    pending = sum(cell in cells for cell in empty)
    outside = counts["not run"] - pending
    counts["not run"] = pending
    return outside


def error_line(error: str, limit: int = 160) -> str:
    """The line of an error text that says what went wrong, at most ``limit`` long.

    The first line, unless it only opens a Python traceback or a cut stderr tail
    (``exit code 1: Traceback ...``): then the last line, the exception itself.

    Parameters
    ----------
    error : str
        A point's error text (one line or a launch's whole stderr tail).
    limit : int, default=160

    Returns
    -------
    str

    Examples
    --------
    >>> error_line("exit code 1: Traceback (most recent call last):\\n  ...\\n"
    ...            "ValueError: iterations must be >= 1, got -5")
    'exit code 1: ValueError: iterations must be >= 1, got -5'
    """
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return "no error text"
    first = lines[0]
    head, sep, rest = first.partition(": ")
    exited = bool(sep) and head.startswith("exit code")
    opening = rest if exited else first
    if len(lines) > 1 and opening.startswith(("Traceback", "...")):
        first = (f"{head}: " if exited else "") + lines[-1]
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _label(coords: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in coords.items())


def failures_of(ds: xr.Dataset, path=None) -> list[dict]:
    """The points of a campaign that did not succeed, with their errors and logs.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results.
    path : str, optional
        The results path: where a store is, its point files name each launch's log.

    Returns
    -------
    list of dict
        ``coords``, ``status``, ``error`` and ``log`` (None without a store).
    """
    if path is not None:
        from .store import ResultStore

        store = ResultStore(path)
        if store.exists():
            return store.failures()
    if "status" not in ds or "error" not in ds:
        return []
    status = ds["status"]
    cells = np.argwhere(np.isin(status.values.astype(str), ["", "ok"], invert=True))
    out = []
    for cell in cells:
        where = dict(zip(status.dims, cell, strict=True))
        coords = {d: ds[d].values[i].item() for d, i in where.items()}
        out.append(
            {
                "coords": coords,
                "status": str(status.values[tuple(cell)]),
                "error": str(ds["error"].isel(where).values.item()),
                "log": None,
            }
        )
    return out


def failure_line(ds: xr.Dataset, path, *, command="scaleprobe") -> str:
    """One line on the points of a run that failed, or ``""`` when none did.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results.
    path : str
        The results path (named in the line: ``scaleprobe show PATH``).
    command : str, default="scaleprobe"

    Returns
    -------
    str
    """
    failed = failures_of(ds, path)
    if not failed:
        return ""
    counts = _status_counts(ds)
    total = sum(v for k, v in counts.items() if k != "not run")
    kinds = sorted({f["status"] for f in failed})
    first = failed[0]
    return (
        f"{len(failed)} of {total} points {'/'.join(kinds)}: first "
        f"{_label(first['coords'])}: {error_line(first['error'], 120)}; see "
        f"`{command} show {path}` for each error and its log"
    )


def metric_error(ds: xr.Dataset, metric: str, path) -> str | None:
    """Why ``metric`` cannot be tabulated (one line), or None when it can.

    Parameters
    ----------
    ds : xarray.Dataset
    metric : str
        What ``show --metric`` was given.
    path : str
        The results path, named in the line.

    Returns
    -------
    str or None

    Examples
    --------
    >>> ds = xr.Dataset({"time": ("run", [1.0]), "status": ("run", ["ok"])})
    >>> metric_error(ds, "status", "r.zarr")  # doctest: +ELLIPSIS
    "r.zarr: 'status' is text, not a measured number: ...; metrics: time"
    >>> metric_error(ds, "tme", "r.zarr")
    "r.zarr has no metric 'tme'; did you mean 'time'? metrics: time"
    """
    import difflib

    names = sorted(
        str(v)
        for v in ds.data_vars
        if v not in _NOT_METRICS and np.issubdtype(ds[v].dtype, np.number)
    )
    listed = f"metrics: {', '.join(names) or 'none'}"
    if metric in names:
        return None
    if metric in ds.data_vars:
        return (
            f"{path}: {metric!r} is text, not a measured number: `scaleprobe show "
            f"{path}` counts the points by status and lists each failed one with "
            f"its error and log; {listed}"
        )
    close = difflib.get_close_matches(metric, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{path} has no metric {metric!r}; {hint}{listed}"


def _failure_lines(failed: list[dict], max_rows: int) -> list[str]:
    lines = [f"points that did not succeed ({len(failed)}):"]
    for failure in failed[:max_rows]:
        log = f"  (log: {failure['log']})" if failure["log"] else ""
        lines.append(
            f"  {_label(failure['coords'])}: {failure['status']}: "
            f"{error_line(failure['error'])}{log}"
        )
    if len(failed) > max_rows:
        lines.append(f"  ... {len(failed) - max_rows} more")
    return lines


def _table(ds: xr.Dataset, metric: str, max_rows: int) -> list[str]:
    """The median of ``metric`` over runs and trials, one row per configuration."""
    var = ds[metric]
    reduce = [d for d in ("run", "trial") if d in var.dims]
    status_dims = ds["status"].dims if "status" in ds else var.dims
    extra = [d for d in var.dims if d not in status_dims and d not in reduce]
    table = var.median(reduce + extra) if reduce or extra else var
    frame = table.to_dataframe(name=metric)[[metric]].dropna()
    units = var.attrs.get("units", "")
    lines = [
        f"median {metric} ({units or 'no unit'}) over "
        f"{', '.join(reduce + extra) or 'nothing'}:"
    ]
    if frame.empty:
        lines.append("  (no successful point yet)")
        return lines
    lines.append(frame.head(max_rows).to_string(float_format=lambda x: f"{x:.4g}"))
    if len(frame) > max_rows:
        lines.append(f"... {len(frame) - max_rows} more rows")
    return lines


def summarize(
    ds: xr.Dataset, metric: str | None = None, max_rows: int = 40, path=None
) -> str:
    """Describe a results Dataset in a few lines and one small table.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results.
    metric : str, optional
        The variable to tabulate; ``time`` when present. A variable of text
        (``status``, ``error``) is refused by :func:`metric_error` first.
    max_rows : int, default=40
        Longest table (and list of failed points) printed.
    path : str, optional
        The results path: the failed points then name their launch logs.

    Returns
    -------
    str
        Campaign name and kernel, dimensions, point counts by status, every point
        that did not succeed with the line of its error that says why (and its log),
        and the median of the metric over ``run`` and ``trial`` for every other
        coordinate.
    """
    lines = [
        f"campaign {ds.attrs.get('title', '?')} (kernel {ds.attrs.get('kernel', '?')}, "
        f"throttle {ds.attrs.get('throttle_mode', '?')})"
    ]
    lines.append("dimensions: " + ", ".join(f"{d}={n}" for d, n in ds.sizes.items()))
    if "status" in ds:
        counts = _status_counts(ds)
        outside = _outside_the_spec(ds, counts)
        lines.append(
            "points: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + (
                f"; {outside} other cell(s) of the grid are no point of its "
                "last spec (a campaign extended by suggest measures some runs "
                "at some counts)"
                if outside
                else ""
            )
        )
        failed = failures_of(ds, path)
        if failed:
            lines += _failure_lines(failed, max_rows)
    metric = metric or ("time" if "time" in ds else None)
    if metric is None or metric not in ds:
        return "\n".join(lines)
    return "\n".join(lines + _table(ds, metric, max_rows))
