"""Project a fitted model onto new node counts, bandwidths and scales."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .derived import EDGEFACTOR, teps
from .features import data_size

__all__ = ["project"]


def _model_ppn(model):
    law = getattr(model, "best_estimator_", model)
    if getattr(law, "over", "nodes") == "nodes" and getattr(law, "ppn", None):
        return float(law.ppn)
    return None


def project(
    model,
    *,
    nodes,
    bandwidth=100,
    scale=None,
    ppn=None,
    interval=None,
    edgefactor=EDGEFACTOR,
):
    """Predict over a grid of new coordinates, with intervals and components.

    Parameters
    ----------
    model : fitted ScalingLaw or PMNFSearch (or any regressor on feature frames)
    nodes : array-like of int
        Node counts to project to.
    bandwidth : float or array-like, default=100
        Bandwidth percentages.
    scale : float or array-like, default=None
        Problem scales; needed for data-size terms and for TEPS.
    ppn : float, default=None
        Ranks per node for the ``ranks`` feature. Default: the model's ``ppn`` (when
        it multiplies nodes itself) or 1.
    interval : PredictionInterval, default=None
        Adds ``time_lower`` / ``time_upper``; without it they are NaN.
    edgefactor : int, default=16
        Edges per vertex for ``teps_predicted = edgefactor * 2**scale / time``.

    Returns
    -------
    xarray.Dataset
        Dims ``nodes``, ``bandwidth`` (and ``scale``); variables ``time_predicted``,
        ``time_lower``, ``time_upper``, ``teps_predicted`` (NaN without a scale),
        ``time_computation``, ``time_communication`` and ``time_terms`` (extra dim
        ``term``) when the model can split its prediction.

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11,
    ...                                  ppn=18)
    >>> ds = project(m, nodes=[4, 64, 1024], bandwidth=[100, 50], scale=28)
    >>> ds["time_predicted"].dims
    ('nodes', 'bandwidth', 'scale')
    """
    coords = {
        "nodes": np.atleast_1d(np.asarray(nodes, dtype=float)),
        "bandwidth": np.atleast_1d(np.asarray(bandwidth, dtype=float)),
    }
    if np.any(coords["nodes"] <= 0) or np.any(coords["bandwidth"] <= 0):
        raise ValueError("nodes and bandwidth must be positive")
    if scale is not None:
        coords["scale"] = np.atleast_1d(np.asarray(scale, dtype=float))
    if ppn is None:
        ppn = _model_ppn(model) or 1.0
    index = pd.MultiIndex.from_product(list(coords.values()), names=list(coords))
    frame = index.to_frame(index=False)
    frame.insert(1, "ppn", float(ppn))
    frame.insert(2, "ranks", frame["nodes"] * float(ppn))
    if scale is not None:
        law = getattr(model, "best_estimator_", model)
        frame["D"] = data_size(frame["scale"], getattr(law, "s0", 25))
    shape = tuple(len(v) for v in coords.values())
    dims = tuple(coords)
    predicted = np.asarray(model.predict(frame), dtype=float)
    if interval is not None:
        lower, upper = interval.bounds(predicted, frame[interval.column])
    else:
        lower = upper = np.full_like(predicted, np.nan)

    def grid(values):
        return np.asarray(values, dtype=float).reshape(shape)

    data_vars = {
        "time_predicted": (
            dims,
            grid(predicted),
            {"units": "s", "long_name": "predicted completion time"},
        ),
        "time_lower": (
            dims,
            grid(lower),
            {"units": "s", "long_name": "lower bound of the prediction interval"},
        ),
        "time_upper": (
            dims,
            grid(upper),
            {"units": "s", "long_name": "upper bound of the prediction interval"},
        ),
    }
    if scale is not None:
        rate = teps(predicted, frame["scale"].to_numpy(), edgefactor=edgefactor)
    else:
        rate = np.full_like(predicted, np.nan)
    data_vars["teps_predicted"] = (
        dims,
        grid(rate),
        {"units": "1/s", "long_name": "predicted traversed edges per second"},
    )
    if hasattr(model, "predict_components"):
        parts = model.predict_components(frame)
        data_vars["time_computation"] = (
            dims,
            grid(parts["computation"]),
            {"units": "s", "long_name": "computation terms of the prediction"},
        )
        data_vars["time_communication"] = (
            dims,
            grid(parts["communication"]),
            {"units": "s", "long_name": "communication terms of the prediction"},
        )
        terms = [c for c in parts.columns if c not in ("computation", "communication")]
        stacked = parts[terms].to_numpy().reshape(*shape, len(terms))
        data_vars["time_terms"] = (
            (*dims, "term"),
            stacked,
            {"units": "s", "long_name": "contribution of each fitted term"},
        )
        coords["term"] = terms
    attrs = {"model": repr(model), "ppn": float(ppn), "edgefactor": edgefactor}
    if interval is not None:
        attrs["interval_level"] = interval.level
    coords["nodes"] = (
        coords["nodes"].astype(int)
        if np.all(coords["nodes"] == np.round(coords["nodes"]))
        else coords["nodes"]
    )
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)
