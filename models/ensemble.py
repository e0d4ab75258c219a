"""The default ensemble of seed 000 for a given feature frame."""

from __future__ import annotations

from .pmnf import PMNFSearch
from .scaling_law import PRESETS, ScalingLaw

__all__ = ["default_ensemble"]


def default_ensemble(X, *, forms=None, search=True, s0=25):
    """Every preset the data can identify, plus an automatic search.

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame from :func:`make_features`.
    forms : sequence of str, default=None
        Presets to use. Default: ``base``; ``generalized`` when ``scale`` varies;
        ``refined`` when ``bandwidth`` varies; ``generalized_refined`` when both do.
    search : bool, default=True
        Add ``PMNFSearch`` (with data-size / bandwidth factors when they vary).
    s0 : float, default=25

    Returns
    -------
    dict of str to estimator
        Laws over ``ranks``, so sweeps that vary ``ppn`` are modelled correctly.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [1, 2], "ranks": [4, 8], "bandwidth": [100, 50]})
    >>> sorted(default_ensemble(X))
    ['base', 'pmnf', 'refined']
    """
    varies = {c: c in X.columns and X[c].nunique() > 1 for c in ("scale", "bandwidth")}
    if forms is None:
        forms = ["base"]
        if varies["scale"]:
            forms.append("generalized")
        if varies["bandwidth"]:
            forms.append("refined")
        if varies["scale"] and varies["bandwidth"]:
            forms.append("generalized_refined")
    unknown = [f for f in forms if f not in PRESETS]
    if unknown:
        raise ValueError(f"unknown forms {unknown}; allowed: {sorted(PRESETS)}")
    ensemble = {f: ScalingLaw(form=f, over="ranks", s0=s0) for f in forms}
    if search:
        ensemble["pmnf"] = PMNFSearch(
            parameter="ranks",
            data=varies["scale"],
            bandwidth=varies["bandwidth"],
            s0=s0,
        )
    return ensemble
