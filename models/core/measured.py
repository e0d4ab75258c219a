"""What was measured at each configuration, as a plot shows it: median and spread.

A projection drawn without the measurements it came from cannot be checked by eye.
:func:`measured_summary` reduces a feature frame to one row per configuration: the
median of every value (over runs and trials, the number ``scaleprobe show`` prints)
and the lowest and highest run (each run's median over its trials). A fit keeps this
table in its training metadata (:func:`measured_table`), so that a model file carries
its measurements to every figure drawn from it (:func:`measured_frame`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .configs import configuration_keys

__all__ = [
    "MEASURED_STATISTICS",
    "measured_frame",
    "measured_summary",
    "measured_table",
]

#: The columns :func:`measured_summary` adds to the configuration keys.
MEASURED_STATISTICS = ("median", "low", "high", "runs")

#: Configuration keys left out of the summary: derived from the others.
_DERIVED = ("D",)


def measured_summary(X, y):
    """One row per configuration: the median and the range of its runs.

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame (``run`` and ``trial`` columns are replicates).
    y : array-like of shape (n_samples,)
        The measurements.

    Returns
    -------
    pandas.DataFrame
        The configuration keys (``nodes``, ``ranks``, ``ppn``, ``bandwidth``,
        ``scale``, application parameters; not ``D``), then ``median`` (over every
        run and trial), ``low`` and ``high`` (the smallest and largest run, each
        run the median of its trials) and ``runs``, sorted by the keys.

    Examples
    --------
    >>> X = pd.DataFrame({"nodes": [2, 2, 2, 2, 4], "run": [0, 0, 1, 1, 0],
    ...                   "trial": [0, 1, 0, 1, 0]})
    >>> measured_summary(X, [1.0, 3.0, 4.0, 6.0, 2.0]).to_dict("list")
    {'nodes': [2, 4], 'median': [3.5, 2.0], 'low': [2.0, 2.0], 'high': [5.0, 2.0], \
'runs': [2, 1]}
    """
    keys = [k for k in configuration_keys(X) if k not in _DERIVED]
    frame = X.reset_index(drop=True)[keys].copy()
    frame["_y"] = np.asarray(y, dtype=float).ravel()
    frame["_run"] = X["run"].to_numpy() if "run" in X.columns else np.arange(len(X))
    frame = frame[np.isfinite(frame["_y"])]
    if frame.empty or not keys:  # nothing measured, or nothing tells them apart
        return pd.DataFrame(columns=[*keys, *MEASURED_STATISTICS])
    grouped = frame.groupby(keys, dropna=False, sort=True)
    table = grouped["_y"].median().rename("median").to_frame()
    runs = frame.groupby([*keys, "_run"], dropna=False, sort=True)["_y"].median()
    by_config = runs.groupby(level=list(range(len(keys))), dropna=False)
    table["low"] = by_config.min()
    table["high"] = by_config.max()
    table["runs"] = by_config.size()
    return table.reset_index()


def measured_table(X, y):
    """:func:`measured_summary` as plain lists, for a fit's training metadata.

    Parameters
    ----------
    X : pandas.DataFrame
    y : array-like

    Returns
    -------
    dict of str to list
        One list per column (JSON-ready).
    """
    summary = measured_summary(X, y)
    return {str(column): summary[column].tolist() for column in summary.columns}


def measured_frame(training):
    """The measured configurations a fit kept, or None when it kept none.

    Parameters
    ----------
    training : dict or None
        Training metadata (:attr:`~scaleprobe.models.EnsembleFit.training`), or its
        JSON text as a projection's ``training`` attribute holds it.

    Returns
    -------
    pandas.DataFrame or None
        The columns of :func:`measured_summary`.
    """
    if isinstance(training, str):
        import json

        training = json.loads(training)
    table = (training or {}).get("measured")
    if not table or not table.get("median"):
        return None
    return pd.DataFrame(table)
