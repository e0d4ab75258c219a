"""Prediction intervals: the laws the data cannot reject, widened by what folds show.

An interval is built in four steps.

1. **The consistent range** (``model.predict_interval``): the profile likelihood
   range of the prediction (Venzon and Moolgavkar 1988; Pawitan 2001): every
   plausible law and coefficients whose loss on the measured configurations is within
   ``sigma**2 * chi2.ppf(level, 1)`` of the best plausible law's, widened (with
   replicates) by the scatter of a centre measured like the training ones (see
   :mod:`scaleprobe.models.laws.envelope`). It holds both the coefficients' noise and
   the disagreement of laws the data cannot tell apart, so it widens by itself as the
   laws part further out — for any law of the family.
2. **Calibration on held-out node counts** (this module): the model is refitted on
   the smaller node counts and its consistent range checked on the larger ones
   (residuals per configuration, never per trial). Wherever a measurement lies
   outside the range, the excess in log time divided by the distance in doublings
   of nodes is a calibration residual; the ``level`` conformal quantile of those
   residuals, ``kappa``, is the rate at which the range must widen with distance:
   ``[low * exp(-kappa d), high * exp(kappa d)]`` with ``d = log2(n / n_max)``.
   When the range held every held-out point, ``kappa`` is 0. The distance reached
   in calibration is recorded; beyond it the widening is an extrapolation too.

3. **Calibration on held-out sizes** (:func:`calibrate_axis`): when the measured
   sizes are three or more (an application parameter such as ``points``, or
   ``scale``), the model is refitted without the largest and checked there the same
   way. Its rate widens the interval per doubling of the size outside the measured
   range (a ``scale`` unit is a doubling): a projection to a size never measured
   carries what extrapolating in size cost the model on the data.

4. **A floor**: whatever the calibration gave, an interval spans at least
   ``floor`` (log, :data:`~scaleprobe.models.core.interface.INTERVAL_FLOOR`) per
   doubling beyond the reference node count, and per doubling of a calibrated
   size beyond its measured range, either side of the prediction. A calibration on
   exact or nearly exact data sets ``kappa`` to 0 and the range to the noise's
   width, which would claim a law holds to a fraction of a percent far beyond the
   machine measured.

Too few calibration residuals for a conformal quantile (fewer than
``ceil(1 / (1 - level)) - 1``) is not a reason for an infinite interval: the
largest residual rate is used instead and an
:class:`~scaleprobe.models.InsufficientDataWarning` says so. A model without a range
of its own (:attr:`~scaleprobe.models.PerformanceModel.interval_method`
``"conformal"``, or any other regressor) gets the conformal part alone, around its
prediction, with the same rules. No interval is ever infinite.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from sklearn.base import clone

from ..core.configs import reduce_configurations
from ..core.interface import INTERVAL_FLOOR, interval_method_of
from ..core.warnings import InsufficientDataWarning, quiet, warn
from .splitters import ExtrapolationSplit

__all__ = [
    "PredictionInterval",
    "calibrate_axis",
    "calibrate_interval",
    "conformal_quantile",
]


@dataclass(frozen=True)
class PredictionInterval:
    """A calibrated interval around a fitted model's consistent range.

    ``bounds`` returns ``[low * exp(-kappa d), high * exp(kappa d)]`` with
    ``(low, high)`` the model's consistent range (its prediction when it has none,
    then widened by ``kappa * max(d, 1)``) and ``d`` the doublings of ``column``
    beyond ``reference``; the bounds are then never closer to the prediction than
    ``exp(floor * (d + s))`` either way, ``s`` the doublings of the size axes
    outside their measured ranges (grouped as their widening is).

    Parameters
    ----------
    level : float
        Nominal coverage, e.g. 0.9.
    kappa : float
        Widening per doubling beyond the reference (log time).
    reference : float
        Largest value of ``column`` the final model was fitted on.
    n_calibration : int
        Calibration residuals behind ``kappa``.
    reach : float
        Largest distance (doublings) seen in calibration.
    column : str, default="nodes"
    method : str, default="consistent-range"
        ``"consistent-range"`` (the model's own range, calibrated) or
        ``"conformal"`` (a model without a range).
    axes : tuple of (str, float, float, float[, str]), default=()
        ``(column, kappa, low, high)`` per size axis (:func:`calibrate_axis`): the
        bounds widen further by ``kappa`` per doubling of ``column`` below ``low``
        or above ``high``, the measured range (``scale``: per unit). A fifth item
        names the axis's group: axes whose calibration held out the same
        configurations (sizes that grow together, as an NPB class's ``na`` and
        ``nnz``) measured one miss between them, and widen by the largest of their
        terms, not their sum; axes of different groups add.
    floor : float, default=0.0
        Least spread (log) per doubling beyond ``reference`` and per doubling of a
        size axis outside its measured range, either side of the prediction;
        :func:`calibrate_interval` sets
        :data:`~scaleprobe.models.core.interface.INTERVAL_FLOOR` (intervals written
        before it had none).

    Examples
    --------
    >>> iv = PredictionInterval(0.9, 0.1, 32, 40, 2.0, method="conformal")
    >>> lower, upper = iv.bounds(None, None, nodes=[64, 128], prediction=[1.0, 1.0])
    >>> np.round(upper, 4).tolist()
    [1.1052, 1.2214]
    >>> exact = PredictionInterval(0.9, 0.0, 32, 40, 2.0, method="conformal",
    ...                            floor=0.05)
    >>> lower, upper = exact.bounds(None, None, nodes=[32, 128], prediction=[1.0, 1.0])
    >>> np.round(lower, 4).tolist(), np.round(upper, 4).tolist()
    ([1.0, 0.9048], [1.0, 1.1052])
    """

    level: float
    kappa: float
    reference: float
    n_calibration: int
    reach: float
    column: str = "nodes"
    method: str = "consistent-range"
    axes: tuple = ()
    floor: float = 0.0

    def bounds(self, model, X, *, nodes=None, prediction=None):
        """Return ``(lower, upper)`` for the rows of ``X``.

        Parameters
        ----------
        model : fitted estimator or None
            Needed for ``method="consistent-range"``.
        X : pandas.DataFrame or None
            Rows to predict (with ``column``).
        nodes : array-like, default=None
            Values of ``column`` (default ``X[column]``).
        prediction : array-like, default=None
            The model's prediction (computed when None).

        Returns
        -------
        lower, upper : ndarray
            Never below zero.
        """
        nodes = np.asarray(X[self.column] if nodes is None else nodes, dtype=float)
        distance = _doublings(nodes, self.reference)
        needed = self.method != "consistent-range" or self.floor > 0
        if prediction is None and needed:
            prediction = model.predict(X)
        if self.method == "consistent-range":
            low, high = model.predict_interval(X, level=self.level)
            width = self.kappa * distance
        else:
            low = high = np.asarray(prediction, dtype=float)
            width = self.kappa * np.maximum(distance, 1.0)
        width = width + self._size_width(X)
        # a law's range may reach below zero far out; a time never does
        low = np.maximum(np.asarray(low, dtype=float), 0.0)
        high = np.maximum(np.asarray(high, dtype=float), low)
        lower, upper = low * np.exp(-width), high * np.exp(width)
        if self.floor > 0:
            spread = self.floor * (distance + self._size_width(X, rate=1.0))
            centre = np.maximum(np.asarray(prediction, dtype=float), 0.0)
            lower = np.minimum(lower, centre * np.exp(-spread))
            upper = np.maximum(upper, centre * np.exp(spread))
        return lower, upper

    def _size_width(self, X, rate=None):
        """The widening along the size axes: the largest term of each group,
        summed over the groups; a term is the axis's ``kappa`` (or ``rate``) times
        the doublings outside its measured range."""
        groups = {}
        for entry in self.axes:
            axis, kappa, smallest, largest = entry[:4]
            if X is None or axis not in X.columns:
                continue
            term = (kappa if rate is None else rate) * _outside(
                X[axis], axis, smallest, largest
            )
            group = entry[4] if len(entry) > 4 else axis
            groups[group] = np.maximum(groups.get(group, 0.0), term)
        return sum(groups.values(), 0.0)

    def to_dict(self):
        """A JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        data["axes"] = tuple(tuple(axis) for axis in data.get("axes", ()))
        return cls(**data)


def _doublings(nodes, reference):
    ratio = np.asarray(nodes, dtype=float) / float(reference)
    return np.log2(np.maximum(ratio, 1.0))


def _sizes(values, column):
    """A size axis's values as sizes: ``2**scale`` for ``scale`` (log2 of the size)."""
    values = np.asarray(values, dtype=float)
    return np.exp2(values) if column == "scale" else values


def _outside(values, column, smallest, largest):
    """Doublings of a size outside the measured ``[smallest, largest]`` (0 inside)."""
    sizes = _sizes(values, column)
    low, high = _sizes([smallest, largest], column)
    with np.errstate(divide="ignore", invalid="ignore"):
        beyond = np.maximum(np.log2(sizes / high), np.log2(low / sizes))
    return np.nan_to_num(np.maximum(beyond, 0.0), nan=0.0)


def conformal_quantile(scores, level):
    """The ``ceil((m + 1) level)``-th smallest of ``m`` scores, or None if too few.

    Examples
    --------
    >>> conformal_quantile(range(1, 20), 0.9)
    18.0
    >>> conformal_quantile([1.0, 2.0], 0.9) is None
    True
    """
    scores = np.sort(np.asarray(list(scores), dtype=float))
    rank = math.ceil((scores.size + 1) * level)
    return float(scores[rank - 1]) if 0 < rank <= scores.size else None


def _configurations(X, y):
    configs = reduce_configurations(X, y)
    first = np.unique(configs.row_config, return_index=True)[1]
    rows = X.iloc[first].reset_index(drop=True)
    order = configs.row_config[first]
    return rows, configs.y[order]


def calibration_residuals(model, X, y, cv, level):
    """Excess of held-out configurations beyond the range, per doubling of distance.

    Returns
    -------
    rates : ndarray
    reach : float
    """
    y = np.asarray(y, dtype=float)
    column = getattr(cv, "column", "nodes")
    rates, reach = [], 0.0
    ranged = interval_method_of(model) == "consistent-range"
    for train, test in cv.split(X, y):
        with quiet():
            fitted = clone(model).fit(X.iloc[train], y[train])
            rows, centres = _configurations(X.iloc[test], y[test])
            if ranged:
                low, high = fitted.predict_interval(rows, level=level)
            else:
                low = high = fitted.predict(rows)
        reference = float(_sizes(X[column].iloc[train], column).max())
        distance = _doublings(_sizes(rows[column], column), reference)
        low = np.maximum(np.asarray(low, dtype=float), 1e-300)
        high = np.maximum(np.asarray(high, dtype=float), 1e-300)
        excess = np.maximum(np.log(centres / high), np.log(low / centres))
        excess = np.maximum(np.nan_to_num(excess, nan=np.inf), 0.0)
        scale = distance if ranged else np.maximum(distance, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(excess > 0, excess / np.maximum(scale, 1e-12), 0.0)
        rates.append(rate)
        reach = max(reach, float(distance.max(initial=0.0)))
    return (np.concatenate(rates) if rates else np.empty(0)), reach


def calibrate_interval(model, X, y, *, level=0.9, cv=None, floor=INTERVAL_FLOOR):
    """Calibrate a :class:`PredictionInterval` for ``model`` on ``X, y``.

    Parameters
    ----------
    model : estimator
        Unfitted or fitted; it is cloned and refitted on each calibration split.
    X : pandas.DataFrame
        Feature frame with the splitter's ``column`` (default ``nodes``).
    y : array-like
        Positive targets.
    level : float, default=0.9
        Nominal coverage in (0, 1).
    cv : splitter with a ``column`` attribute, default=None
        Default ``ExtrapolationSplit(column="nodes", n_splits=3)``.
    floor : float, default=INTERVAL_FLOOR
        Least spread (log) per doubling beyond the largest ``column``, either side
        of the prediction (:class:`PredictionInterval`).

    Returns
    -------
    PredictionInterval
        ``reference`` is the largest value of ``column`` in ``X``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    cv = cv if cv is not None else ExtrapolationSplit(column="nodes", n_splits=3)
    column = getattr(cv, "column", "nodes")
    y = np.asarray(y, dtype=float)
    if np.any(y <= 0):
        raise ValueError("prediction intervals need positive targets (times)")
    rates, reach = calibration_residuals(model, X, y, cv, level)
    method = interval_method_of(model)
    kappa = conformal_quantile(rates, level)
    if kappa is None or not math.isfinite(kappa):
        finite = rates[np.isfinite(rates)]
        kappa = float(finite.max()) if finite.size else 0.0
        if method == "conformal" and not finite.size:
            kappa = 1.0  # nothing to calibrate on: a factor e per doubling
        warn(
            f"{rates.size} calibration residual(s) for the {level:.0%} interval (a "
            f"conformal quantile needs {math.ceil(level / (1 - level))}): using the "
            f"largest observed widening rate ({kappa:.3g} per doubling of "
            f"{column}); measure more {column.rstrip('s')} counts for a calibrated "
            "interval",
            InsufficientDataWarning,
            stacklevel=2,
        )
    return PredictionInterval(
        level=float(level),
        kappa=float(kappa),
        reference=float(X[column].max()),
        n_calibration=int(rates.size),
        reach=float(reach),
        column=column,
        method=method,
        floor=float(floor),
    )


def calibrate_axis(model, X, y, column, *, level=0.9):
    """How much wider ``model``'s interval must grow per doubling of a size.

    The model is refitted without the largest value of ``column`` and its range
    checked on the held-out configurations, as :func:`calibrate_interval` does along
    the node counts: the excess in log time per doubling of the size beyond the
    training's largest. With too few residuals for a conformal quantile (the usual
    case: one held-out size), the largest rate.

    Parameters
    ----------
    model : estimator
        It is cloned and refitted.
    X : pandas.DataFrame
        Feature frame with ``column``.
    y : array-like
        Positive targets.
    column : str
        The size: an application parameter, or ``scale`` (log2 of the size; a unit
        is a doubling).
    level : float, default=0.9

    Returns
    -------
    tuple or None
        ``((column, kappa, low, high), residuals)`` for
        :attr:`PredictionInterval.axes` and the number of residuals behind
        ``kappa``; None with fewer than three sizes, or when no refit could
        predict a held-out size.

    Examples
    --------
    >>> import pandas as pd
    >>> from scaleprobe.models import ScalingLaw
    >>> X = pd.DataFrame({"nodes": [1, 2, 4] * 3, "bandwidth": 100.0,
    ...                   "scale": [20] * 3 + [21] * 3 + [22] * 3})
    >>> y = 2.0 ** X["scale"] * (1.0 / X["nodes"] + 0.5 / X["nodes"] ** 0.5)
    >>> law = ScalingLaw(form="generalized", s0=20)  # time grows as the data, 2**scale
    >>> (column, kappa, low, high), residuals = calibrate_axis(law, X, y, "scale")
    >>> column, round(kappa, 6), low, high, residuals
    ('scale', 0.0, 20.0, 22.0, 3)
    >>> y_square = y * 2.0 ** (X["scale"] - 20)  # it grows as the data squared
    >>> axis, _ = calibrate_axis(law, X, y_square, "scale")
    >>> round(axis[1], 2)  # the error beyond the law's range, a doubling
    0.78
    """
    values = np.unique(np.asarray(X[column], dtype=float))
    if values.size < 3:
        return None
    cv = ExtrapolationSplit(column=column, n_splits=1)
    try:
        rates, _ = calibration_residuals(model, X, np.asarray(y, float), cv, level)
    except (ValueError, np.linalg.LinAlgError):
        return None  # a refit on fewer sizes is not possible
    finite = rates[np.isfinite(rates)]
    if not finite.size:
        return None
    kappa = conformal_quantile(finite, level)
    kappa = float(finite.max()) if kappa is None else kappa
    return (column, kappa, float(values[0]), float(values[-1])), int(finite.size)
