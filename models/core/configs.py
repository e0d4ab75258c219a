"""Reduce measurements to configurations: one centre, a count and a spread each.

Models are fitted and judged per *configuration* (a distinct combination of the
features: nodes, ranks, scale, bandwidth...), never per trial: the trials of one run
(e.g. the BFS roots of a Graph500 run) are averaged first, and the runs of one
configuration are its replicates. Noise is multiplicative, so the centre is the
geometric mean of the replicates and the spread is the standard deviation of their
logarithms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scaleprobe.kernels.schema import (
    COLLECTIVE_KINDS,
    COLLECTIVE_LATENCY_COLUMNS,
    CRITICAL_PATH_COLUMNS,
    FIM_COLUMNS,
    LINK_COLUMNS,
    REPLICATE_COLUMNS,
)

__all__ = [
    "MEASURED_COLUMNS",
    "Configurations",
    "collapse_trials",
    "configuration_keys",
    "is_measured",
    "reduce_configurations",
]

#: Columns that are measurements carried along in a feature frame, not features:
#: the critical path, the collectives' latency by shape and the link of each row.
MEASURED_COLUMNS = (
    *CRITICAL_PATH_COLUMNS,
    *COLLECTIVE_LATENCY_COLUMNS,
    *LINK_COLUMNS,
)

_COLLECTIVE_PARTS = ("_time", "_calls", "_jobs", "_job_bytes")


def is_measured(column) -> bool:
    """Whether a frame column is a measurement carried along, not a feature.

    Parameters
    ----------
    column : str
        A column of a feature frame.

    Returns
    -------
    bool
        True for the critical-path and link columns (:data:`MEASURED_COLUMNS`) and
        for FiM's records (:data:`~scaleprobe.kernels.schema.FIM_COLUMNS`,
        ``<kind>_time``, ``_calls``, ``_jobs``, ``_job_bytes`` of the
        :data:`~scaleprobe.kernels.schema.COLLECTIVE_KINDS`).

    Examples
    --------
    >>> [is_measured(c) for c in ("nodes", "cp_comp_time", "bcast_job_bytes",
    ...                           "points", "comp_time_iterations")]
    [False, True, True, False, True]
    """
    column = str(column)
    if column in MEASURED_COLUMNS or column in FIM_COLUMNS:
        return True
    return any(
        column.endswith(part) and column[: -len(part)] in COLLECTIVE_KINDS
        for part in _COLLECTIVE_PARTS
    )


def configuration_keys(X):
    """The columns of ``X`` that define a configuration.

    Examples
    --------
    >>> import pandas as pd
    >>> configuration_keys(pd.DataFrame(columns=["nodes", "run", "cp_comp_time"]))
    ['nodes']
    """
    return [c for c in X.columns if c not in REPLICATE_COLUMNS and not is_measured(c)]


@dataclass(frozen=True)
class Configurations:
    """Measurements reduced to one row per configuration.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per configuration: the key columns, then ``y`` (geometric mean of the
        replicates), ``n`` (number of replicates) and ``log_sd`` (standard deviation
        of the replicates' logarithms, NaN with one replicate).
    keys : tuple of str
        The key columns.
    row_config : numpy.ndarray of int
        For every input row, the index of its configuration in ``frame``.
    """

    frame: pd.DataFrame
    keys: tuple
    row_config: np.ndarray

    @property
    def noise(self) -> float:
        """Pooled standard deviation of log replicates (NaN without replicates)."""
        sd, n = self.frame["log_sd"].to_numpy(), self.frame["n"].to_numpy()
        ok = np.isfinite(sd) & (n > 1)
        if not ok.any():
            return float("nan")
        dof = n[ok] - 1
        return float(np.sqrt(np.sum(dof * sd[ok] ** 2) / np.sum(dof)))

    @property
    def y(self) -> np.ndarray:
        """Centre of every configuration."""
        return self.frame["y"].to_numpy(dtype=float)

    @property
    def n(self) -> np.ndarray:
        """Replicates of every configuration."""
        return self.frame["n"].to_numpy(dtype=float)

    def relative_spread(self) -> float:
        """Median over configurations of ``max / min - 1`` of their replicates."""
        return float(np.nanmedian(self.frame["spread"].to_numpy(dtype=float)))


def reduce_configurations(X, y, *, keys=None) -> Configurations:
    """Group rows into configurations (trials averaged per run, runs as replicates).

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame.
    y : array-like of shape (n_samples,)
        Positive measurements.
    keys : sequence of str, default=None
        Configuration columns. Default: every column but ``run`` and ``trial``.

    Returns
    -------
    Configurations

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [2, 2, 4, 4], "run": [0, 1, 0, 1]})
    >>> c = reduce_configurations(X, [4.0, 1.0, 1.0, 1.0])
    >>> c.frame[["nodes", "y", "n"]].to_dict("list")
    {'nodes': [2, 4], 'y': [2.0, 1.0], 'n': [2, 2]}
    """
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"X must be a pandas DataFrame; got {type(X).__name__}")
    y = np.asarray(y, dtype=float).ravel()
    if y.size != len(X):
        raise ValueError(f"X has {len(X)} rows but y has {y.size} values")
    if y.size == 0:
        raise ValueError("no measurements: X and y are empty")
    if not np.all(np.isfinite(y)) or np.any(y <= 0):
        raise ValueError(
            "measurements must be positive and finite (times, counts); got "
            f"minimum {np.nanmin(y)!r}"
        )
    if keys is None:
        keys = configuration_keys(X)
    keys = list(keys)
    if not keys:
        raise ValueError("no configuration columns: X holds only run/trial")
    frame = X.reset_index(drop=True).copy()
    frame["_y"] = y
    frame["_row"] = np.arange(len(frame))
    # Trials of one run are averaged first: a run is the unit that repeats.
    if "run" in frame.columns and "trial" in frame.columns:
        per_run = frame.groupby([*keys, "run"], dropna=False, sort=True)
        runs = per_run["_y"].mean().rename("_y").reset_index()
    else:
        runs = frame[[*keys, "_y"]]
    runs = runs.assign(_log=np.log(runs["_y"].to_numpy(dtype=float)))
    grouped = runs.groupby(keys, dropna=False, sort=True)
    table = grouped["_log"].agg(["mean", "std", "count", "min", "max"]).reset_index()
    table = table.rename(columns={"count": "n", "std": "log_sd"})
    table["y"] = np.exp(table["mean"])
    table["spread"] = np.exp(table["max"] - table["min"]) - 1.0
    table = table.drop(columns=["mean", "min", "max"])
    index = pd.MultiIndex.from_frame(table[keys])
    row_config = index.get_indexer(pd.MultiIndex.from_frame(frame[keys]))
    return Configurations(table, tuple(keys), np.asarray(row_config, dtype=np.int64))


def collapse_trials(X, values):
    """Average the trials of every run: one row per run (or per row without trials).

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame, possibly with ``run`` and ``trial`` columns.
    values : pandas.DataFrame
        Columns to average, aligned with ``X``.

    Returns
    -------
    X_runs : pandas.DataFrame
        ``X`` without ``trial``, one row per run.
    values_runs : pandas.DataFrame
        The means, aligned with ``X_runs``.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [2, 2, 2], "run": [0, 0, 1], "trial": [0, 1, 0]})
    >>> Xr, v = collapse_trials(X, pd.DataFrame({"time": [1.0, 3.0, 5.0]}))
    >>> Xr["run"].tolist(), v["time"].tolist()
    ([0, 1], [2.0, 5.0])
    """
    X = X.reset_index(drop=True)
    values = values.reset_index(drop=True)
    if "trial" not in X.columns:
        return X, values
    keys = [c for c in X.columns if c != "trial" and not is_measured(c)]
    frame = pd.concat([X[keys], values], axis=1)
    means = frame.groupby(keys, dropna=False, sort=True)[list(values.columns)].mean()
    means = means.reset_index()
    return means[keys], means[list(values.columns)]
