"""Turn a results Dataset into a tidy feature frame and a target."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["data_size", "make_features"]

#: Columns a feature frame always has, in this order, before any other sweep key.
FEATURE_COLUMNS = ("nodes", "ppn", "ranks", "bandwidth", "scale", "D")


def data_size(scale, s0=25):
    """Return the normalised data size ``D = 2**(scale - s0)`` of seed 000.

    Parameters
    ----------
    scale : float or array-like
        Problem scale ``s`` (Graph500: ``2**s`` vertices).
    s0 : float, default=25
        Reference scale, so that ``D = 1`` at ``s0``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> float(data_size(28))
    8.0
    """
    return np.exp2(np.asarray(scale, dtype=float) - s0)[()]


def make_features(dataset, *, target="time", s0=25):
    """Build the feature frame ``X`` and target ``y`` from a results Dataset.

    Points whose ``status`` is not ``"ok"`` and missing values of the target are
    dropped; ``run`` and ``trial`` (when present) become rows.

    Parameters
    ----------
    dataset : xarray.Dataset
        Results with a ``nodes`` dimension (or scalar coordinate) and the target
        variable. ``ppn`` defaults to 1 and ``bandwidth`` to 100 (percent) when the
        Dataset has neither a dimension nor a coordinate of that name.
    target : str, default="time"
        Name of the data variable to model.
    s0 : float, default=25
        Reference scale of the data size ``D = 2**(scale - s0)``; ``D`` is only added
        when the Dataset has a ``scale``.

    Returns
    -------
    X : pandas.DataFrame
        Columns ``nodes``, ``ppn``, ``ranks`` (``nodes * ppn``), ``bandwidth``,
        ``scale`` and ``D`` when available, then every other sweep key (``run``,
        ``trial``, ``msg_bytes``...).
    y : pandas.Series
        The target, named after it, aligned with ``X``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"time": (("nodes", "run"), np.ones((2, 3)))},
    ...                 coords={"nodes": [4, 9], "run": [0, 1, 2]})
    >>> X, y = make_features(ds)
    >>> list(X.columns), len(y)
    (['nodes', 'ppn', 'ranks', 'bandwidth', 'run'], 6)
    """
    if not isinstance(dataset, xr.Dataset):
        raise TypeError(
            f"dataset must be an xarray.Dataset, got {type(dataset).__name__}"
        )
    if target not in dataset.data_vars:
        raise ValueError(
            f"target {target!r} is not a data variable; the Dataset has "
            f"{sorted(map(str, dataset.data_vars))}"
        )
    values = dataset[target]
    if "status" in dataset.data_vars:
        values = values.where(dataset["status"] == "ok")
    frame = values.to_series().dropna().reset_index()
    for name in ("nodes", "ppn", "bandwidth", "scale"):
        if name not in frame.columns and name in values.coords:
            coord = values.coords[name]
            if coord.size != 1:
                raise ValueError(f"coordinate {name!r} must be a dimension or a scalar")
            frame[name] = coord.item()
    if "nodes" not in frame.columns:
        raise ValueError(
            "the Dataset has no 'nodes' dimension or coordinate; got dims "
            f"{list(dataset.dims)}"
        )
    if "ppn" not in frame.columns:
        frame["ppn"] = 1
    if "bandwidth" not in frame.columns:
        frame["bandwidth"] = 100.0
    frame["ranks"] = frame["nodes"] * frame["ppn"]
    if "scale" in frame.columns:
        frame["D"] = data_size(frame["scale"], s0)
    first = [c for c in FEATURE_COLUMNS if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c != target]
    X = frame[first + rest].reset_index(drop=True)
    y = pd.Series(frame[target].to_numpy(dtype=float), name=target)
    return X, y
