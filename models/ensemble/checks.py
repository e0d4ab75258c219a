"""Checks of the data behind a fit: is the effect being modelled above the noise?"""

from __future__ import annotations

import numpy as np

from ..core.configs import configuration_keys, reduce_configurations
from ..core.warnings import NoiseWarning, warn

__all__ = ["noise_against_bandwidth", "run_spread"]


def run_spread(X, y):
    """Median relative spread ``max / min - 1`` of repeated runs (NaN without runs).

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [2, 2, 4, 4], "run": [0, 1, 0, 1]})
    >>> round(run_spread(X, [1.0, 1.1, 2.0, 2.2]), 3)
    0.1
    """
    if "run" not in X.columns:
        return float("nan")
    configs = reduce_configurations(X, y)
    spread = configs.frame.loc[configs.frame["n"] > 1, "spread"]
    return float(spread.median()) if spread.size else float("nan")


def noise_against_bandwidth(X, y):
    """Warn when repeated runs spread as much as bandwidth changes the time.

    For every configuration measured at several bandwidths, the bandwidth effect is
    the relative change of its centre between the highest and the lowest bandwidth;
    the noise is the relative spread of its repeated runs. When the median spread is
    as large as the median effect, a fitted bandwidth term describes noise.

    Parameters
    ----------
    X : pandas.DataFrame
    y : array-like

    Returns
    -------
    tuple of float or None
        ``(median effect, median spread)``, None when the check does not apply.
    """
    if "bandwidth" not in X.columns or X["bandwidth"].nunique() < 2:
        return None
    if "run" not in X.columns:
        return None
    configs = reduce_configurations(X, y).frame
    keys = [k for k in configuration_keys(X) if k != "bandwidth"]
    effects, spreads = [], []
    for _, group in configs.groupby(keys) if keys else [(None, configs)]:
        if group["bandwidth"].nunique() < 2:
            continue
        low = group.loc[group["bandwidth"].idxmin()]
        high = group.loc[group["bandwidth"].idxmax()]
        effects.append(abs(low["y"] / high["y"] - 1.0))
        spreads.extend(group.loc[group["n"] > 1, "spread"].tolist())
    if not effects or not spreads:
        return None
    effect, spread = float(np.median(effects)), float(np.median(spreads))
    if spread >= effect:
        warn(
            f"repeated runs spread by {spread:.0%} (median max/min - 1) while "
            f"bandwidth changes the time by {effect:.0%} (median, lowest against "
            "highest bandwidth): a fitted bandwidth effect is noise; repeat runs or "
            "throttle harder",
            NoiseWarning,
            stacklevel=3,
        )
    return effect, spread
