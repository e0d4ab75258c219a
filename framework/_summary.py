"""Plain-text summaries of a results Dataset, for ``scaleprobe show`` and the demo."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["summarize"]


def _status_counts(ds: xr.Dataset) -> dict:
    values, counts = np.unique(ds["status"].values, return_counts=True)
    pairs = zip(values, counts, strict=True)
    return {str(v) if v else "not run": int(c) for v, c in pairs}


def summarize(ds: xr.Dataset, metric: str | None = None, max_rows: int = 40) -> str:
    """Describe a results Dataset in a few lines and one small table.

    Parameters
    ----------
    ds : xarray.Dataset
        Campaign results.
    metric : str, optional
        The variable to tabulate; ``time`` when present.
    max_rows : int, default=40
        Longest table printed.

    Returns
    -------
    str
        Campaign name and kernel, dimensions, point counts by status, and the median
        of the metric over ``run`` and ``trial`` for every other coordinate.
    """
    lines = [
        f"campaign {ds.attrs.get('title', '?')} (kernel {ds.attrs.get('kernel', '?')}, "
        f"throttle {ds.attrs.get('throttle_mode', '?')})"
    ]
    lines.append("dimensions: " + ", ".join(f"{d}={n}" for d, n in ds.sizes.items()))
    if "status" in ds:
        counts = _status_counts(ds)
        lines.append(
            "points: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
    metric = metric or ("time" if "time" in ds else None)
    if metric is None or metric not in ds:
        return "\n".join(lines)
    var = ds[metric]
    reduce = [d for d in ("run", "trial") if d in var.dims]
    extra = [d for d in var.dims if d not in ds["status"].dims and d not in reduce]
    table = var.median(reduce + extra) if reduce or extra else var
    frame = table.to_dataframe(name=metric)[[metric]].dropna()
    units = var.attrs.get("units", "")
    lines.append(
        f"median {metric} ({units}) over {', '.join(reduce + extra) or 'nothing'}:"
    )
    if frame.empty:
        lines.append("  (no successful point yet)")
    else:
        lines.append(frame.head(max_rows).to_string(float_format=lambda x: f"{x:.4g}"))
        if len(frame) > max_rows:
            lines.append(f"... {len(frame) - max_rows} more rows")
    return "\n".join(lines)
