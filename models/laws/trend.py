"""Tests of "the time does not change with the process count", for many series at once.

The slope, order and curvature of the centres of every series of a group, as arrays
(the profile search tests thousands of call paths in one call); used by
:func:`~scaleprobe.models.laws.flat.trend_tests` (slope and order) for one series
as well, so the ensemble and the profile search read those alike. Only numpy: a
profile fit starts in a fraction of a second, and importing scipy's distributions
would add up to half a second to it; the t and F tails are the regularised
incomplete beta function (:func:`beta_tail`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "NO_TREND_LEVEL",
    "beta_tail",
    "curvature_pvalues",
    "f_pvalues",
    "rank_pvalues",
    "slope_pvalues",
    "t_pvalues",
]

#: Significance level of the trend tests: a trend is read in the data when any test
#: rejects "no trend" at this level.
NO_TREND_LEVEL = 0.1


def slope_pvalues(x, centres):
    """P-values of "the line through the centres has slope zero", for many series.

    The t-test of the least-squares slope, ``m - 2`` degrees of freedom (as
    :func:`scipy.stats.linregress`), for every column of ``centres`` at once.

    Parameters
    ----------
    x : array-like of shape (m,)
        The abscissae (log counts), at least 3 distinct.
    centres : array-like of shape (m, series)

    Returns
    -------
    ndarray of shape (series,)
        1 where the centres are all equal.

    Examples
    --------
    >>> x = np.log([2.0, 4.0, 8.0, 16.0])
    >>> flat = np.log([1.0, 1.1, 0.9, 1.05])
    >>> rising = 0.5 * x + [0.0, 0.01, -0.01, 0.0]
    >>> slope_pvalues(x, np.column_stack([flat, rising])).round(3).tolist()
    [0.918, 0.0]
    """
    return _last_term_pvalues(x, centres, degree=1)


def curvature_pvalues(x, centres):
    """P-values of "the centres lie on a line, not a curve", for many series.

    The t-test of the quadratic coefficient of the least-squares parabola through
    the centres, ``m - 3`` degrees of freedom: a series that falls and then rises
    again (or the reverse) has no overall slope and no order, yet a trend.

    Parameters
    ----------
    x : array-like of shape (m,)
        The abscissae (log counts), at least 4 distinct.
    centres : array-like of shape (m, series)

    Returns
    -------
    ndarray of shape (series,)

    Examples
    --------
    >>> x = np.log([2.0, 4.0, 8.0, 16.0, 32.0])
    >>> bowl = np.log([60.0, 35.0, 22.0, 25.0, 33.0])
    >>> level = np.log([10.2, 9.7, 10.4, 9.9, 10.1])
    >>> curvature_pvalues(x, np.column_stack([bowl, level])).round(3).tolist()
    [0.019, 0.893]
    """
    return _last_term_pvalues(x, centres, degree=2)


def _last_term_pvalues(x, centres, degree):
    """The t-test of the highest coefficient of the least-squares polynomial of
    ``degree`` through each column of ``centres``: 1 where that coefficient is zero
    (to rounding), 0 where only the residuals are."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(centres, dtype=float)
    dx = (x - x.mean()) / max(float(np.ptp(x)), 1e-300)
    design = np.vander(dx, degree + 1, increasing=True)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    dof = x.size - degree - 1
    unscaled = np.linalg.inv(design.T @ design)[degree, degree]
    last = np.abs(coef[degree])
    scale = np.sqrt((residual**2).sum(axis=0) / dof * unscaled)
    rounding = 1e-10 * np.maximum(1.0, np.abs(y).max(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = t_pvalues(last / scale, dof)
    p = np.where(scale > rounding, p, 0.0)
    return np.where((last > rounding) & np.isfinite(p), p, 1.0)


def rank_pvalues(x, centres):
    """P-values of "the centres are not ordered by the count", for many series.

    Kendall's tau between the (increasing) counts and each column of ``centres``,
    two-sided: exact from the number of discordant pairs (the Mahonian
    distribution, as :func:`scipy.stats.kendalltau` with ``method="exact"``);
    a column with tied centres takes the normal approximation with the variance
    its ties leave (scipy's ``method="asymptotic"``).

    Parameters
    ----------
    x : array-like of shape (m,)
        Increasing counts.
    centres : array-like of shape (m, series)

    Returns
    -------
    ndarray of shape (series,)

    Examples
    --------
    >>> y = np.column_stack([[1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]])
    >>> rank_pvalues([2, 4, 8, 16], y).round(3).tolist()
    [0.083, 0.333]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(centres, dtype=float)
    m = x.size
    i, j = np.triu_indices(m, 1)
    order = np.sign(y[j] - y[i])
    discordant = (order < 0).sum(axis=0)
    pairs = m * (m - 1) // 2
    tail = np.cumsum(_inversions(m))
    low = np.minimum(discordant, pairs - discordant)
    p = np.minimum(1.0, 2.0 * tail[low])
    for s in np.flatnonzero((order == 0).any(axis=0)):
        p[s] = _tied_pvalue(order[:, s], y[:, s])
    return p


def _tied_pvalue(order, centres):
    """Kendall's test of one series with tied centres: the normal approximation of
    the score with the variance the ties leave (counts are never tied)."""
    m = centres.size
    _, ties = np.unique(centres, return_counts=True)
    variance = (
        m * (m - 1) * (2 * m + 5) - float(np.sum(ties * (ties - 1) * (2 * ties + 5)))
    ) / 18.0
    if variance <= 0:
        return 1.0
    return math.erfc(abs(float(order.sum())) / math.sqrt(2.0 * variance))


@functools.lru_cache(maxsize=64)
def _inversions(m):
    """The share of orderings of ``m`` items with 0, 1, ... discordant pairs."""
    share = np.array([1.0])
    for n in range(2, m + 1):  # the n-th item adds 0 .. n-1 inversions, alike
        share = np.convolve(share, np.full(n, 1.0 / n))
    return share


def t_pvalues(t, dof):
    """Two-sided tail of Student's t: ``P(|T| >= t)`` with ``dof`` degrees of freedom.

    Parameters
    ----------
    t : array-like
        Non-negative statistics (NaN gives NaN).
    dof : float

    Returns
    -------
    ndarray

    Examples
    --------
    >>> t_pvalues([0.0, 2.0, 12.706], 1).round(4).tolist()
    [1.0, 0.2952, 0.05]
    """
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(np.isinf(t), 0.0, dof / (dof + t * t))
    return beta_tail(dof / 2.0, 0.5, x)


def f_pvalues(f, dfn, dfd):
    """Upper tail of the F distribution: ``P(F >= f)``.

    Parameters
    ----------
    f : array-like
        Non-negative statistics (NaN gives NaN).
    dfn, dfd : float or array-like
        Degrees of freedom of the numerator and of the denominator.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> f_pvalues([0.0, 3.0, 19.0], 2, 2).round(4).tolist()
    [1.0, 0.25, 0.05]
    """
    f = np.asarray(f, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(np.isinf(f), 0.0, dfd / (dfd + dfn * f))
    return beta_tail(np.asarray(dfd) / 2.0, np.asarray(dfn) / 2.0, x)


def beta_tail(a, b, x):
    """The regularised incomplete beta function ``I_x(a, b)``, elementwise.

    Its continued fraction (Press et al., Numerical Recipes, 3rd ed., 6.4), on the
    side of ``x`` where it converges fast.

    Parameters
    ----------
    a, b : float or array-like
        Positive.
    x : array-like
        In [0, 1] (NaN gives NaN).

    Returns
    -------
    ndarray
    """
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    out = np.full(x.shape, np.nan)
    inside = (x > 0) & (x < 1)
    out[x <= 0], out[x >= 1] = 0.0, 1.0
    a, b, x = a[inside], b[inside], x[inside]
    lgamma = np.frompyfunc(math.lgamma, 1, 1)
    log_front = (
        (lgamma(a + b) - lgamma(a) - lgamma(b)).astype(float)
        + a * np.log(x)
        + b * np.log1p(-x)
    )
    flip = x > (a + 1.0) / (a + b + 2.0)
    fa, fb, fx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1 - x, x)
    part = np.exp(log_front) * _beta_fraction(fa, fb, fx) / fa
    out[inside] = np.where(flip, 1.0 - part, part)
    return out


def _beta_fraction(a, b, x, steps=300):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c = np.ones_like(x)
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
    h = d.copy()
    for m in range(1, steps + 1):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / np.where(np.abs(d) < tiny, tiny, d)
            c = 1.0 + numerator / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            h = h * d * c
        if np.all(np.abs(d * c - 1.0) < 1e-15):
            break
    return h
