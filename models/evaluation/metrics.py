"""Regression metrics for completion times (lower is better but ``r2``, ``within``)."""

from __future__ import annotations

import numpy as np

__all__ = ["METRICS", "score_predictions"]


def _relative(y, pred):
    return (pred - y) / y


def mse(y, pred):
    """Mean squared error."""
    return float(np.mean((pred - y) ** 2))


def r2(y, pred):
    """Coefficient of determination (1 is perfect; NaN for constant ``y``)."""
    total = np.sum((y - np.mean(y)) ** 2)
    return float(1 - np.sum((y - pred) ** 2) / total) if total > 0 else float("nan")


def mape(y, pred):
    """Mean absolute percentage error, in percent."""
    return float(100 * np.mean(np.abs(_relative(y, pred))))


def smape(y, pred):
    """Symmetric mean absolute percentage error, in percent (0 to 200)."""
    return float(100 * np.mean(2 * np.abs(pred - y) / (np.abs(y) + np.abs(pred))))


def max_relative_error(y, pred):
    """Largest ``|pred - y| / y``."""
    return float(np.max(np.abs(_relative(y, pred))))


def within_10(y, pred):
    """Fraction of predictions within ±10 % of the measurement."""
    return float(np.mean(np.abs(_relative(y, pred)) <= 0.10))


def within_30(y, pred):
    """Fraction of predictions within ±30 % of the measurement."""
    return float(np.mean(np.abs(_relative(y, pred)) <= 0.30))


#: Metric name -> function(y, pred); names are the variables of ``evaluate``'s output.
METRICS = {
    "mse": mse,
    "r2": r2,
    "mape": mape,
    "smape": smape,
    "max_relative_error": max_relative_error,
    "within_10": within_10,
    "within_30": within_30,
}


def score_predictions(y, pred):
    """Return every metric of :data:`METRICS` as a dict.

    Parameters
    ----------
    y, pred : array-like
        Measured and predicted values (``y`` positive).

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> score_predictions([1.0, 2.0], [1.1, 2.0])["mape"]
    5.000000000000004
    """
    y = np.asarray(y, dtype=float)
    pred = np.asarray(pred, dtype=float)
    return {name: metric(y, pred) for name, metric in METRICS.items()}
