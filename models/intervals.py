"""Prediction intervals by split-conformal calibration on extrapolation residuals.

Why conformal and not a bootstrap over runs: resampling runs or trials measures how
noisy the coefficients are *if the law is right*. What actually breaks a projection
from 32 to 1024 nodes is the law being slightly wrong, which no resampling of the
measured configurations can see. Split-conformal calibration instead refits the model
on the small node counts, predicts the larger measured ones, and uses the quantiles of
those real extrapolation errors — distribution-free and calibrated to the very
question being asked. The errors are taken in log space (times span orders of
magnitude and noise is multiplicative). The calibration splits reach up to
``calibrated_distance = max log2(n_test / n_train_max)`` doublings beyond their
training nodes; a projection reaching further gets its half-width scaled by
``log2(n / n_fit_max) / calibrated_distance``, so intervals widen with how far they
extrapolate. The assumption (exchangeable errors between calibration and projection)
is weaker than a bootstrap's, but far projections remain an extrapolation: treat
their intervals as indicative.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from sklearn.base import clone

from .splitters import ExtrapolationSplit

__all__ = ["PredictionInterval", "conformal_interval"]


@dataclass(frozen=True)
class PredictionInterval:
    """A multiplicative interval ``pred * exp(±q * widen(n))``.

    ``widen(n) = max(1, log2(n / reference_nodes) / calibrated_distance)``.

    Parameters
    ----------
    level : float
        Nominal coverage, e.g. 0.9.
    log_halfwidth : float
        Conformal quantile ``q`` of the scaled absolute log errors (may be ``inf``
        when there are too few calibration points for the level).
    reference_nodes : float
        Largest node count of the data the projected model was fitted on.
    n_calibration : int
        Number of calibration residuals.
    calibrated_distance : float, default=1.0
        Largest extrapolation, in doublings of ``column``, seen in calibration.
    column : str, default="nodes"
        Feature column measuring the extrapolation distance.

    Examples
    --------
    >>> iv = PredictionInterval(0.9, 0.1, 32, 40, calibrated_distance=1.0)
    >>> lower, upper = iv.bounds([1.0, 1.0], [64, 128])
    >>> np.round(upper, 4).tolist()
    [1.1052, 1.2214]
    """

    level: float
    log_halfwidth: float
    reference_nodes: float
    n_calibration: int
    calibrated_distance: float = 1.0
    column: str = "nodes"

    def bounds(self, prediction, nodes):
        """Return ``(lower, upper)`` arrays for predictions at ``nodes``."""
        prediction = np.asarray(prediction, dtype=float)
        reach = _doublings(nodes, self.reference_nodes) / self.calibrated_distance
        width = self.log_halfwidth * np.maximum(reach, 1.0)
        return prediction * np.exp(-width), prediction * np.exp(width)

    def to_dict(self):
        """A JSON-ready dict (``inf`` becomes the string ``"inf"``)."""
        out = asdict(self)
        if math.isinf(out["log_halfwidth"]):
            out["log_halfwidth"] = "inf"
        return out

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`."""
        return cls(**{**data, "log_halfwidth": float(data["log_halfwidth"])})


def _doublings(nodes, reference):
    ratio = np.asarray(nodes, dtype=float) / float(reference)
    return np.log2(np.maximum(ratio, 1.0))


def conformal_quantile(scores, level):
    """The ``ceil((m + 1) level)``-th smallest of ``m`` scores (``inf`` if too few)."""
    scores = np.sort(np.asarray(scores, dtype=float))
    rank = math.ceil((scores.size + 1) * level)
    return float(scores[rank - 1]) if 0 < rank <= scores.size else math.inf


def extrapolation_scores(model, X, y, cv):
    """Absolute log errors of ``model`` refitted on each training split.

    Returns
    -------
    scores : ndarray
    distance : float
        Largest extrapolation distance (doublings of the splitter's column, >= 1).
    """
    y = np.asarray(y, dtype=float)
    column = getattr(cv, "column", "nodes")
    scores, distance = [], 1.0
    for train, test in cv.split(X, y):
        fitted = clone(model).fit(X.iloc[train], y[train])
        pred = np.maximum(fitted.predict(X.iloc[test]), 1e-300)
        reference = X[column].iloc[train].max()
        scores.append(np.abs(np.log(y[test] / pred)))
        distance = max(
            distance, float(_doublings(X[column].iloc[test], reference).max())
        )
    return (np.concatenate(scores) if scores else np.empty(0)), distance


def conformal_interval(model, X, y, *, level=0.9, cv=None):
    """Calibrate a :class:`PredictionInterval` for ``model`` on ``X, y``.

    Parameters
    ----------
    model : estimator
        Unfitted or fitted; it is cloned and refitted on each calibration split.
    X : pandas.DataFrame
        Feature frame with a ``nodes`` column (or the splitter's ``column``).
    y : array-like
        Positive targets.
    level : float, default=0.9
        Nominal coverage in (0, 1).
    cv : splitter with a ``column`` attribute, default=None
        Default ``ExtrapolationSplit(column="nodes", n_splits=2)``.

    Returns
    -------
    PredictionInterval
        ``reference_nodes`` is the largest value of ``column`` in ``X`` (the data the
        final model is fitted on).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    cv = cv if cv is not None else ExtrapolationSplit(column="nodes", n_splits=2)
    column = getattr(cv, "column", "nodes")
    y = np.asarray(y, dtype=float)
    if np.any(y <= 0):
        raise ValueError("conformal intervals need positive targets (times)")
    scores, distance = extrapolation_scores(model, X, y, cv)
    return PredictionInterval(
        level=float(level),
        log_halfwidth=conformal_quantile(scores, level),
        reference_nodes=float(X[column].max()),
        n_calibration=int(scores.size),
        calibrated_distance=distance,
        column=column,
    )
