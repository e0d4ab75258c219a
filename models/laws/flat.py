"""No trend beyond the noise: the level of the measurements, and the tests for it."""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.utils.validation import check_is_fitted

from ..core.interface import check_level
from ..core.warnings import InsufficientDataWarning, warn
from . import envelope as _envelope
from .baseline import PowerLawBaseline
from .trend import NO_TREND_LEVEL, rank_pvalues, slope_pvalues

__all__ = ["NO_TREND_LEVEL", "FlatTrend", "no_trend", "trend_tests"]


def trend_tests(counts, logs):
    """P-values of three tests of "the time does not change with the process count".

    - ``slope``: the log-log line through the configuration centres has slope zero
      (t-test, ``m - 2`` degrees of freedom; needs 4 counts);
    - ``rank``: the centres are not ordered by the count (Kendall's tau, exact; needs 4
      counts): a monotone series is a trend whatever its shape, a jump included;
    - ``replicates``: the centres differ no more than the repeated runs of one
      configuration do (one-way analysis of variance; needs a count with two runs).

    A test the data cannot make is absent from the result.

    Parameters
    ----------
    counts : array-like of shape (m,)
        Distinct process counts, increasing.
    logs : sequence of array-like
        Logarithms of the measurements at each count (its runs).

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> import numpy as np
    >>> logs = [np.log([10.2]), np.log([9.7]), np.log([10.4]), np.log([9.9])]
    >>> out = trend_tests([2, 4, 8, 16], logs)
    >>> sorted(out), bool(min(out.values()) > NO_TREND_LEVEL)
    (['rank', 'slope'], True)
    """
    x = np.log(np.asarray(counts, dtype=float))
    runs = [np.asarray(v, dtype=float).ravel() for v in logs]
    centres = np.array([v.mean() for v in runs])
    out = {}
    if x.size >= 4:
        out["slope"] = float(slope_pvalues(x, centres[:, None])[0])
        out["rank"] = float(rank_pvalues(x, centres[:, None])[0])
    if x.size >= 2 and any(v.size > 1 for v in runs):
        spread = sum(float(np.sum((v - v.mean()) ** 2)) for v in runs)
        if spread > 0:
            out["replicates"] = float(stats.f_oneway(*runs).pvalue)
        elif np.ptp(centres) > 0:
            out["replicates"] = 0.0  # identical runs, different centres
    return {k: (1.0 if not np.isfinite(v) else v) for k, v in out.items()}


class FlatTrend(PowerLawBaseline):
    """The level of the measurements: a time that does not change with ``p``.

    The law of a program that scales perfectly in the weak sense, and the best
    estimate of any program whose measurements show no trend beyond their noise: a
    slope that the data cannot tell from zero, continued to thousands of processes,
    only extrapolates the noise. Each configuration (bandwidth, scale, application
    parameters) keeps its own level, the geometric mean of its centres.

    A trend too small to show in the data may still be there, and grow far out (a
    term ``0.02 p`` adds 3 % on 16 nodes and 200 % on 1024): :meth:`predict_interval`
    is the consistent range of every plausible law of the scaling-law family that the
    configuration's centres cannot reject, as for the other laws (see
    :mod:`scaleprobe.models.evaluation.intervals`). :func:`trend_tests` says whether
    the data show a trend; ``spread_`` keeps the log-log line through the centres,
    whose slope bounds say how large a power-law trend could hide.

    Parameters
    ----------
    over : {"nodes", "ranks"}, default="nodes"

    Attributes
    ----------
    lines_ : dict
        ``{group: (level, 0.0)}``.
    spread_ : dict
        ``{group: {"counts": m, "centre": mean log p, "sxx": ..., "sigma": ...,
        "dof": m - 2, "slope": ..., "tests": {...}, "table": configurations,
        "noise": ..., "noise_dof": ...}}``: the line through the group's centres,
        its residual standard deviation, the trend tests, and the centres (``p``,
        ``y``, ``n``, ``log_sd``) and noise the interval is drawn from.
    group_columns_ : list of str
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[2.0], [4.0], [8.0], [16.0]])
    >>> flat = FlatTrend().fit(p, [10.2, 9.7, 10.4, 9.9])
    >>> flat.predict([[1024.0]]).round(2).tolist()
    [10.05]
    >>> lower, upper = flat.predict_interval([[32.0], [1024.0]])
    >>> bool(upper[1] / lower[1] > upper[0] / lower[0])
    True
    """

    def fit(self, X, y):
        """Take each group's level and the line through its centres.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Positive values.

        Returns
        -------
        self : FlatTrend
        """
        self.spread_ = {}
        return super().fit(X, y)

    def _group_line(self, key, part):
        runs = {float(p): rows["log"].to_numpy() for p, rows in part.groupby("p")}
        table = _envelope.training_table({"p": part["p"]}, np.exp(part["log"]))
        level = float(np.exp(np.log(table["y"]).mean()))
        self.spread_[key] = {**_line_spread(runs), **_noise(table, level)}
        return level, 0.0

    interval_method = "consistent-range"

    def describe(self):
        """The law in words: the level of each configuration.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        column = self.process_column_ or "nodes"
        levels = [f"{a:.4g}" for a, _ in self.lines_.values()]
        shown = ", ".join(levels[:4]) + (", ..." if len(levels) > 4 else "")
        return (
            f"level of the measurements, the same at every {column[:-1]} count "
            f"({shown})"
        )

    def predict_interval(self, X, *, level=0.9):
        """The level and every plausible law its configuration cannot reject.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        level : float, default=0.9

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)

        Warns
        -----
        InsufficientDataWarning
            For a group measured once at one count: no noise and no law can be
            checked, and its range is the level alone (calibration on held-out
            counts widens it).
        """
        check_is_fitted(self)
        check_level(level)
        centre = self.predict(X)
        p, groups, _ = self._split(X, reset=False)
        lower, upper = centre.copy(), centre.copy()
        keys = [tuple(g) for g in groups]
        short = False
        for key in dict.fromkeys(keys):
            rows = np.array([k == key for k in keys])
            line = self.spread_[key]
            table = line["table"]
            if not np.isfinite(line["noise"]):
                short = True
                continue
            limit = _envelope.budget(line["noise"], level, line["noise_dof"])
            low, high = _envelope.family_range(
                table,
                {"p": p[rows]},
                centre[rows],
                limit,
                own=("1",),
                data=False,
                bandwidth=False,
            )
            lower[rows], upper[rows] = low, high
        if short:
            warn(
                "FlatTrend: a configuration measured once at one process count has "
                "no noise and no law to check: its range is the level alone",
                InsufficientDataWarning,
                stacklevel=2,
            )
        return lower, upper


def _noise(table, level):
    """The configurations the interval is drawn from and the noise it assumes (as
    for the other laws: replicates, or the residual scatter of the level if larger)."""
    residual = (table["y"] - level) / table["y"]
    loss = float(np.sum(table["n"] * residual**2))
    replicate, replicate_dof = _envelope.replicate_noise_dof(table)
    noise, noise_dof = _envelope.noise_level(
        replicate, loss, len(table) - 1, replicate_dof
    )
    return {"table": table, "noise": noise, "noise_dof": noise_dof}


def _line_spread(runs):
    """The line through the centres of ``{p: logs}`` and the trend tests."""
    counts = np.array(sorted(runs))
    logs = [runs[p] for p in counts]
    x = np.log(counts)
    centres = np.array([v.mean() for v in logs])
    out = {
        "counts": int(counts.size),
        "centre": float(x.mean()),
        "sxx": float(np.sum((x - x.mean()) ** 2)),
        "dof": int(counts.size - 2),
        "slope": 0.0,
        "sigma": 0.0,
        "tests": trend_tests(counts, logs),
    }
    if counts.size >= 3:
        slope, intercept = np.polyfit(x, centres, 1)
        residual = centres - (intercept + slope * x)
        out["slope"] = float(slope)
        out["sigma"] = float(np.sqrt(np.sum(residual**2) / (counts.size - 2)))
    return out


def no_trend(model, level=NO_TREND_LEVEL):
    """Whether every group of a fitted :class:`FlatTrend` shows no trend.

    Every group needs a test to make (four counts, or repeated runs): a group the
    data cannot test is not read as flat.

    Parameters
    ----------
    model : FlatTrend
        Fitted.
    level : float, default=NO_TREND_LEVEL

    Returns
    -------
    bool
    """
    lines = model.spread_
    return bool(lines) and all(
        line["tests"] and min(line["tests"].values()) > level for line in lines.values()
    )
