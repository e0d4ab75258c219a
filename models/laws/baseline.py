"""The naive baseline every score is read against: a power law through the last two."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ..core.configs import REPLICATE_COLUMNS, is_measured
from ..core.interface import ModelBase, PerformanceModelTags, fitted_ranges
from .regime import REGIME_FACTOR, REGIME_SLOPE, REGIME_SPREAD

__all__ = [
    "REGIME_FACTOR",
    "REGIME_SLOPE",
    "REGIME_SPREAD",
    "PowerLawBaseline",
    "RegimeTrend",
]

#: Columns that never separate groups: the process count and what derives from it.
_NOT_GROUPS = ("nodes", "ranks", "ppn", "D", *REPLICATE_COLUMNS)


class PowerLawBaseline(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """Power law ``a * p**b`` through the two largest measured process counts.

    The simplest extrapolation anyone would draw by hand: the local slope on a
    log-log plot, continued. A model that does not beat it has not earned its
    complexity. Every other feature (bandwidth, scale, message size...) gets its own
    line; the centre of a configuration is the geometric mean of its measurements.

    Parameters
    ----------
    over : {"nodes", "ranks"}, default="nodes"
        The process-count column ``p`` (falls back to ``ranks`` when a frame has no
        ``nodes``; arrays use their first column).

    Attributes
    ----------
    lines_ : dict
        ``{group: (a, b)}``; ``group`` is a tuple of the other features' values.
    group_columns_ : list of str
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[1.0], [2.0], [4.0], [8.0]])
    >>> base = PowerLawBaseline().fit(p, [9.0, 8.0, 4.0, 2.0])
    >>> base.predict([[16.0]]).round(6).tolist()
    [1.0]
    """

    def __init__(self, *, over="nodes"):
        self.over = over

    def _split(self, X, reset, y=None):
        if isinstance(X, pd.DataFrame) and (
            self.over in X.columns or "ranks" in X.columns
        ):
            column = self.over if self.over in X.columns else "ranks"
            if reset:
                self.group_columns_ = [
                    c
                    for c in X.columns
                    if c not in _NOT_GROUPS
                    and c != column
                    and pd.api.types.is_numeric_dtype(X[c])
                    and not is_measured(c)
                ]
                self.process_column_ = column
            data = X[[self.process_column_, *self.group_columns_]].to_numpy(float)
        else:
            if reset:
                self.group_columns_ = []
                self.process_column_ = None
            data = X
        if reset:
            data, y = validate_data(self, data, y, dtype=np.float64, y_numeric=True)
        else:
            data = validate_data(self, data, reset=False, dtype=np.float64)
        check_non_negative(data, type(self).__name__)
        groups = data[:, 1 : 1 + len(self.group_columns_)]
        return data[:, 0], groups, y

    def fit(self, X, y):
        """Draw one line per group through its two largest process counts.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Positive values.

        Returns
        -------
        self : PowerLawBaseline
        """
        if self.over not in ("nodes", "ranks"):
            raise ValueError(f"over must be 'nodes' or 'ranks'; got {self.over!r}")
        p, groups, y = self._split(X, reset=True, y=y)
        if np.any(y <= 0) or np.any(p <= 0):
            raise ValueError(
                "PowerLawBaseline needs positive process counts and targets"
            )
        frame = pd.DataFrame(groups, columns=[f"g{i}" for i in range(groups.shape[1])])
        frame["p"], frame["log"] = p, np.log(y)
        keys = list(frame.columns[:-2])
        self.lines_ = {}
        parts = frame.groupby(keys) if keys else [((), frame)]
        for key, part in parts:
            key = key if isinstance(key, tuple) else (key,)
            self.lines_[key] = self._group_line(key, part)
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def describe(self):
        """The law in words: the naive trend's lines.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        column = self.process_column_ or "nodes"
        return f"power law through the two largest {column[:-1]} counts of each group"

    def _group_line(self, key, part):
        """``(a, b)`` of one group from its rows (columns ``p`` and ``log``)."""
        return self._line(key, part.groupby("p")["log"].mean().sort_index())

    def _line(self, key, centres):
        """``(a, b)`` of one group from its log-centres per process count."""
        if centres.size == 1:
            return float(np.exp(centres.iloc[0])), 0.0
        (p1, l1), (p2, l2) = list(centres.items())[-2:]
        return _through(p2, l2, (l2 - l1) / (np.log(p2) - np.log(p1)))

    def predict(self, X):
        """Continue each group's line.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        p, groups, _ = self._split(X, reset=False)
        out = np.empty(p.size)
        for i, key in enumerate(map(tuple, groups)):
            line = self.lines_.get(key)
            if line is None:
                where = ", ".join(
                    f"{c}={float(v):g}"
                    for c, v in zip(self.group_columns_, key, strict=True)
                )
                raise ValueError(f"no baseline for {where}: it was not measured")
            a, b = line
            # In log space: a steep line on random data must not overflow.
            with np.errstate(all="ignore"):
                out[i] = np.exp(np.log(a) + b * np.log(p[i]))
        return out


def _through(p, log_value, slope):
    """The line of ``slope`` through ``(p, exp(log_value))`` as ``(a, b)``."""
    with np.errstate(all="ignore"):
        intercept = float(np.exp(log_value - slope * np.log(p)))
    return intercept, float(slope)


class RegimeTrend(PowerLawBaseline):
    """The naive trend, aware of a change of regime at the largest process count.

    A collective whose library switches algorithm or protocol, a working set that
    leaves (or enters) a cache: the time jumps over one step, and a line through
    the two largest counts continues the jump itself (a gather measured at 30, 42,
    59 and 580 us on 32..256 ranks would be projected at 5800 us on 512; it took
    750). When the last step's log-log slope differs from the step before by at
    least :data:`REGIME_SLOPE` and the last point lies a factor of
    :data:`REGIME_FACTOR` or more off the earlier slope continued, the group's
    line continues from the largest count with the slope measured before the
    jump: the new regime entered, growing as the old one did. Otherwise it is
    :class:`PowerLawBaseline`'s line.

    It assumes what one point in the new regime cannot show: that the new regime
    grows as the old one did and that no other change follows.
    :func:`~scaleprobe.models.fit_ensemble` says so when it projects it, and
    :meth:`predict_interval` lets the new regime's slope differ from the old one's
    by :data:`REGIME_SPREAD`.

    Parameters
    ----------
    over : {"nodes", "ranks"}, default="nodes"

    Attributes
    ----------
    lines_ : dict
        ``{group: (a, b)}``.
    changes_ : dict
        ``{group: {"before": p, "after": p, "slope_before": b0, "slope_last": b1,
        "factor": f}}`` for every group whose last step is a change of regime;
        ``factor`` is the last point over the earlier slope continued.
    group_columns_ : list of str
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[32.0], [64.0], [128.0], [256.0]])
    >>> trend = RegimeTrend().fit(p, [30.0, 42.0, 59.0, 580.0])
    >>> round(trend.changes_[()]["slope_last"], 2)
    3.3
    >>> trend.predict([[512.0]]).round(0).tolist()
    [815.0]
    """

    def fit(self, X, y):
        """Draw each group's line, continuing a change of regime at its end.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Positive values.

        Returns
        -------
        self : RegimeTrend
        """
        self.changes_ = {}
        return super().fit(X, y)

    def _line(self, key, centres):
        if centres.size >= 3:
            (p0, l0), (p1, l1), (p2, l2) = list(centres.items())[-3:]
            step = np.log(p2) - np.log(p1)
            before = (l1 - l0) / (np.log(p1) - np.log(p0))
            last = (l2 - l1) / step
            departure = (last - before) * step
            if abs(last - before) >= REGIME_SLOPE and abs(departure) >= np.log(
                REGIME_FACTOR
            ):
                self.changes_[key] = {
                    "before": float(p1),
                    "after": float(p2),
                    "slope_before": float(before),
                    "slope_last": float(last),
                    "factor": float(np.exp(departure)),
                }
                return _through(p2, l2, before)
        return super()._line(key, centres)

    interval_method = "consistent-range"

    def describe(self):
        """The trend in words, with the groups whose last step is a new regime.

        Returns
        -------
        str
        """
        text = super().describe()
        if self.changes_:
            text += (
                f"; after a jump at the largest count ({len(self.changes_)} group(s)), "
                "the slope before it from the largest count"
            )
        return text

    def predict_interval(self, X, *, level=0.9):
        """The range of slopes a new regime may take, continued from its first count.

        For a group whose last step is a change of regime, the slope beyond it is
        the old one's plus or minus :data:`REGIME_SPREAD` (an assumption, stated, not
        a statistic: the range does not depend on ``level``); every other group's
        range is its prediction alone. Calibration on held-out counts widens it
        further (:func:`~scaleprobe.models.calibrate_interval`).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        level : float, default=0.9
            Accepted for the interval protocol.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        centre = self.predict(X)
        p, groups, _ = self._split(X, reset=False)
        spread = np.zeros(p.size)
        for i, key in enumerate(map(tuple, groups)):
            change = self.changes_.get(key)
            if change is not None:
                spread[i] = REGIME_SPREAD * abs(np.log(p[i] / change["after"]))
        return centre * np.exp(-spread), centre * np.exp(spread)
