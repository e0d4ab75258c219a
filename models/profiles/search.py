"""Every candidate law of many series, fitted and checked at once.

The series of one group share their measured counts ``x`` (the process counts of a
profile: every call path of one experiment). For every candidate law
(:class:`Candidate`) and every series, the law is fitted on each prefix of the
counts (the ``k`` smallest) by closed-form weighted least squares — 2 x 2 normal
equations solved for all laws and series in a few array operations — and its
prediction of the larger counts is its held-out error. The choice is made on those
errors (:func:`select`): the simplest law whose error is within a margin of the
best. The same choice made on every shorter prefix (nested) gives the errors the
intervals are calibrated on (:mod:`scaleprobe.models.profiles.calibrate`).

Only numpy is used: a profile of thousands of call paths is searched in well under a
second per thousand series.

Candidates
----------
- ``constant``: ``c0`` (the level), on every count or on the last three;
- ``power``: ``a * x**b``, a line on a log-log plot: through the last two counts
  (the naive trend), the last three, or every count;
- ``pmnf``: ``c0 + c1 * x**i * log2(x)**j``, Extra-P's single-term normal form
  (Calotoiu et al. 2013), with ``i`` from :data:`EXPONENTS` (and the falling
  ``x**-i``, ``0 < i <= 1``) and ``j`` in 0, 1, 2; ``c0 + c1 log2(x)`` is the law
  linear in ``log2(x)``;
- ``segment``: the normal form fitted only on the counts after a break the data show
  (:func:`~scaleprobe.models.laws.regime.find_jumps`): the last segment of a
  piecewise law, as Extra-P's segmented modeler finds.

Every fitted law must stay positive from the smallest count to :data:`HORIZON`
times the largest, or it is not a law of a time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..laws.regime import find_jumps
from ..laws.terms import Term, term_cost
from ..laws.trend import (
    NO_TREND_LEVEL,
    curvature_pvalues,
    f_pvalues,
    rank_pvalues,
    slope_pvalues,
)

__all__ = [
    "EXPONENTS",
    "HORIZON",
    "Candidate",
    "SeriesGroup",
    "default_candidates",
    "no_trend",
    "search_group",
    "select",
]

#: Extra-P's exponents ``i`` of ``x**i`` (its default single-parameter modeler).
EXPONENTS = tuple(
    Fraction(text)
    for text in (
        *("0", "1/4", "1/3", "1/2", "2/3", "3/4", "1", "5/4", "4/3", "3/2"),
        *("5/3", "7/4", "2", "9/4", "7/3", "5/2", "8/3", "11/4", "3"),
    )
)
#: A law must stay positive up to this factor beyond the largest measured count.
HORIZON = 64.0
#: Relative part of the margin within which a simpler law is taken over the best.
TOLERANCE = 0.25
#: How the law is chosen among those within the margin: "simplest", or "median"
#: (the one whose prediction at MEDIAN_AT times the largest count is their median).
CHOICE = "median"
MEDIAN_AT = 4.0
TOP = 5
PRECISE = 0.02
SLOPE_MARGIN = 0.5
SLOPE_REACH = 8.0
#: Order of windows among laws otherwise alike: 1 prefers the last counts (the
#: window the folds tested), -1 every count.
LOCAL = 1
# Held-out steps a fold's error is taken at (the next count and the one after).
_STEPS = 2
# Prefixes the choice is scored on: at most this many, the latest ones.
_FOLDS = 3
# Weight of a fold against the next later one.
_FOLD_DECAY = 0.5
_KIND_ORDER = {"constant": 0, "power": 1, "regime": 1, "pmnf": 2, "segment": 3}


@dataclass(frozen=True)
class Candidate:
    """One law of the search: its form, and the counts it is fitted on.

    Parameters
    ----------
    kind : {"constant", "power", "pmnf", "segment", "regime"}
        ``regime`` is the power law of the slope before a jump at the largest
        count, through that count (the fit builds it; the search never does).
    term : Term or None, default=None
        The normal-form term ``x**i log2(x)**j`` of ``pmnf`` and ``segment`` laws.
    window : int, default=0
        Fit on the last ``window`` counts of a prefix; 0 for all of them
        (``segment`` laws start after the series' break instead).

    Examples
    --------
    >>> law = Candidate("pmnf", Term(p_exponent=Fraction(0), log_exponent=1))
    >>> law.describe([2.0, 0.5])
    '2 + 0.5*log2(p)'
    >>> Candidate("power", window=2).label
    'naive trend'
    """

    kind: str
    term: Term | None = None
    window: int = 0

    @property
    def points(self):
        """Fewest counts the law is fitted on."""
        return {"constant": 1, "power": 2, "regime": 2}.get(self.kind, 3)

    @property
    def label(self):
        """Short name of the law, as tables print it."""
        if self.kind == "power" and self.window == 2:
            return "naive trend"
        if self.kind == "regime":
            return "trend before the jump, from the largest count"
        if self.kind == "power":
            where = "all counts" if not self.window else f"last {self.window}"
            return f"power law ({where})"
        if self.kind == "constant":
            return "level" + ("" if not self.window else f" (last {self.window})")
        text = f"c0 + c1*{self.term.name}"
        if self.kind == "segment":
            return text + " (after the break)"
        return text + ("" if not self.window else f" (last {self.window})")

    def describe(self, coef, variable="p"):
        """The fitted law as text.

        Parameters
        ----------
        coef : sequence of float
            ``(c0, c1)``, or ``(log a, b)`` of a power law about ``x = 1``.
        variable : str, default="p"

        Returns
        -------
        str
        """
        c0, c1 = (float(c) for c in coef)
        if self.kind == "constant":
            return f"{c0:.4g}"
        if self.kind in ("power", "regime"):
            return f"{np.exp(c0):.4g}*{variable}^{c1:.3g}"
        name = self.term.name.replace("p", variable) if variable != "p" else None
        name = name or self.term.name
        sign = "+" if c1 >= 0 else "-"
        return f"{c0:.4g} {sign} {abs(c1):.4g}*{name}".replace("*1/", "/")

    def basis(self, x):
        """The law's variable part at ``x``: its term, ``log(x)``, or 0."""
        x = np.asarray(x, dtype=float)
        if self.kind == "constant":
            return np.zeros_like(x)
        if self.kind in ("power", "regime"):
            return np.log(x)
        with np.errstate(all="ignore"):
            return self.term.evaluate(x)

    def predict(self, coef, x):
        """The law's value at ``x`` for coefficients ``coef``."""
        c0, c1 = float(coef[0]), float(coef[1])
        with np.errstate(over="ignore", invalid="ignore"):
            value = c0 + c1 * self.basis(x)
            return np.exp(value) if self.kind in ("power", "regime") else value

    def simplicity(self):
        """Sort key: fewer coefficients, more counts, commoner terms first."""
        cost = term_cost(self.term) if self.term is not None else 0.0
        growth = 0.0
        if self.term is not None:
            growth = abs(float(self.term.p_exponent)) + self.term.log_exponent / 10
        window = self.window if self.window else 1000
        return (self.points, _KIND_ORDER[self.kind], cost, LOCAL * window, growth)


@functools.cache
def default_candidates():
    """The candidate laws of the search, simplest first.

    Returns
    -------
    tuple of Candidate
    """
    terms = [
        Term(p_exponent=i, log_exponent=j)
        for i in EXPONENTS
        for j in (0, 1, 2)
        if (i, j) != (0, 0)
    ]
    terms += [
        Term(p_exponent=-i, log_exponent=j)
        for i in EXPONENTS
        if 0 < i <= 1
        for j in (0, 1)
    ]
    laws = [Candidate("constant"), Candidate("constant", window=3)]
    laws += [Candidate("power", window=w) for w in (2, 3, 0)]
    laws += [Candidate("pmnf", t) for t in terms]
    laws += [Candidate("segment", t) for t in terms]
    return tuple(sorted(laws, key=Candidate.simplicity))


@dataclass
class SeriesGroup:
    """Series measured at the same counts: the unit the search vectorises over.

    Parameters
    ----------
    x : ndarray of shape (m,)
        The counts, increasing.
    centre : ndarray of shape (m, s)
        Mean of the repetitions of each series at each count (positive).
    count : ndarray of shape (m, s)
        Number of repetitions behind each centre.
    noise : ndarray of shape (s,)
        Standard deviation of the log of the repetitions about their centre,
        pooled over the counts (0 without repetitions).
    """

    x: np.ndarray
    centre: np.ndarray
    count: np.ndarray
    noise: np.ndarray

    @property
    def size(self):
        """Number of series."""
        return self.centre.shape[1]


def _breaks(group):
    """Index of the first count after the last break of each series (0: none),
    and the jumps found."""
    start = np.zeros(group.size, dtype=int)
    jumps = []
    log_centre = np.log(group.centre)
    for s in range(group.size):
        found = find_jumps(group.x, log_centre[:, s]) if group.x.size >= 3 else []
        jumps.append(found)
        if found:
            start[s] = found[-1]["index"]
    return start, jumps


def _solve(basis, y, weight):
    """Weighted least squares of ``y ~ c0 + c1 * basis`` for every law and series.

    ``basis`` is (laws, counts), ``y`` and ``weight`` (counts, series) with zero
    weight outside a law's window; returns ``c0, c1`` of shape (laws, series), NaN
    where the window cannot identify both.
    """
    scale = np.nanmax(np.abs(np.where(weight.any(axis=1), basis, 0.0)), axis=1)
    scale = np.where(scale > 0, scale, 1.0)[:, None]
    f = np.nan_to_num(basis / scale, nan=0.0, posinf=0.0, neginf=0.0)
    wy = weight * y
    g11 = weight.sum(axis=0)
    g12 = f @ weight
    g22 = (f * f) @ weight
    b1 = wy.sum(axis=0)
    b2 = f @ wy
    det = g11 * g22 - g12**2
    with np.errstate(all="ignore"):
        bad = ~(det > 1e-9 * g11 * g22)
        c0 = (g22 * b1 - g12 * b2) / det
        c1 = (g11 * b2 - g12 * b1) / det / scale
    c0[bad], c1[bad] = np.nan, np.nan
    return c0, c1


def _masks(group, k, starts, window):
    """Weights mask (counts, series) of the window of a prefix of ``k`` counts."""
    index = np.arange(group.x.size)[:, None]
    if window == "segment":
        start = starts[None, :]
    else:
        start = np.full((1, group.size), max(0, k - window) if window else 0)
    return (index >= start) & (index < k)


def fit_prefix(group, laws, k, starts):
    """Coefficients ``(laws, series, 2)`` of every law fitted on the ``k`` smallest
    counts (NaN where its window holds too few)."""
    coef = np.full((len(laws), group.size, 2), np.nan)
    y = group.centre
    relative = group.count / y**2
    by_window = {}
    for index, law in enumerate(laws):
        key = "segment" if law.kind == "segment" else law.window
        by_window.setdefault((key, law.kind), []).append(index)
    for (window, kind), indices in by_window.items():
        mask = _masks(group, k, starts, window)
        enough = mask.sum(axis=0) >= laws[indices[0]].points
        if window == "segment":
            enough &= starts > 0
        if not enough.any():
            continue
        if kind == "power":
            c0, c1 = _solve(np.log(group.x)[None, :], np.log(y), group.count * mask)
        elif kind == "constant":
            weight = relative * mask
            with np.errstate(all="ignore"):
                c0 = ((weight * y).sum(axis=0) / weight.sum(axis=0))[None, :]
            c1 = np.zeros_like(c0)
        else:
            basis = np.stack([laws[i].basis(group.x) for i in indices])
            c0, c1 = _solve(basis, y, relative * mask)
        c0 = np.where(enough[None, :], c0, np.nan)
        coef[indices, :, 0] = c0
        coef[indices, :, 1] = np.where(enough[None, :], c1, np.nan)
    return coef


def predict(laws, coef, x):
    """Predictions ``(laws, series, points)`` of every law at ``x``."""
    x = np.asarray(x, dtype=float)
    basis = np.stack([law.basis(x) for law in laws])[:, None, :]
    power = np.array([law.kind in ("power", "regime") for law in laws])[:, None, None]
    with np.errstate(all="ignore"):
        value = coef[:, :, :1] + coef[:, :, 1:] * np.nan_to_num(basis)
        return np.where(power, np.exp(value), value)


def horizon(x):
    """The counts a law must stay positive at: the measured ones up to
    :data:`HORIZON` times the largest."""
    x = np.asarray(x, dtype=float)
    far = x[-1] * np.geomspace(1.0, HORIZON, 7)[1:]
    return np.concatenate([x, far])


@dataclass
class GroupSearch:
    """The fitted candidates of one group: errors of every prefix, the final fits.

    Attributes
    ----------
    errors : dict of int to ndarray
        Prefix ``k`` -> log(prediction / centre) ``(laws, series, m)`` at the
        counts ``t >= k`` (NaN elsewhere or where the law cannot be fitted).
    valid : dict of int to ndarray
        Prefix ``k`` -> ``(laws, series)``: the law fitted on it stays positive.
    coef : ndarray of shape (laws, series, 2)
        Every law fitted on all counts.
    starts : ndarray of shape (series,)
        First count after each series' last break (0: none).
    jumps : list of list of dict
        The breaks of each series (:func:`~scaleprobe.models.laws.regime.find_jumps`).
    """

    errors: dict
    valid: dict
    coef: np.ndarray
    starts: np.ndarray
    jumps: list
    far: dict = None


def _observed_slopes(x, centre):
    """Smallest and largest log-log slope ``(series,)`` between two counts at least
    a doubling apart (closer counts give their noise as slopes)."""
    logx, logy = np.log(x), np.log(centre)
    i, j = np.triu_indices(x.size, 1)
    apart = logx[j] - logx[i] >= np.log(2.0) - 1e-9
    if not apart.any():
        apart = np.ones_like(i, dtype=bool)
    i, j = i[apart], j[apart]
    slopes = (logy[j] - logy[i]) / (logx[j] - logx[i])[:, None]
    return slopes.min(axis=0), slopes.max(axis=0)


def _plausible_slope(group, laws, coef, k):
    """``(laws, series)``: the law's log-log slope beyond the prefix's largest count
    stays within :data:`SLOPE_MARGIN` of the slopes the prefix shows."""
    if not SLOPE_MARGIN:
        return True
    x = group.x[k - 1]
    ends = predict(laws, coef, [x, SLOPE_REACH * x])
    with np.errstate(all="ignore"):
        slope = np.log(ends[:, :, 1] / ends[:, :, 0]) / np.log(SLOPE_REACH)
    low, high = _observed_slopes(group.x[:k], group.centre[:k])
    low, high = low - SLOPE_MARGIN, high + SLOPE_MARGIN
    return (slope >= low[None, :]) & (slope <= high[None, :])


def search_group(group, laws):
    """Fit every law on every prefix of a group and record its held-out errors.

    Parameters
    ----------
    group : SeriesGroup
    laws : list of Candidate

    Returns
    -------
    GroupSearch
    """
    m = group.x.size
    starts, jumps = _breaks(group)
    reach = horizon(group.x)
    errors, valid, far = {}, {}, {}
    first = max(2, m - _FOLDS - 3)
    for k in range(first, m + 1):
        coef = fit_prefix(group, laws, k, starts)
        values = predict(laws, coef, reach)
        valid[k] = np.all(np.isfinite(values) & (values > 0), axis=2)
        far[k] = predict(laws, coef, [MEDIAN_AT * group.x[k - 1]])[:, :, 0]
        valid[k] &= _plausible_slope(group, laws, coef, k)
        if k == m:
            final = coef
            continue
        held = values[:, :, :m]
        with np.errstate(all="ignore"):
            error = np.log(np.where(held > 0, held, np.nan) / group.centre.T[None])
        error = np.where(np.isfinite(coef[:, :, :1]) & ~(held > 0), 10.0, error)
        error[:, :, :k] = np.nan
        errors[k] = error
    return GroupSearch(errors, valid, final, starts, jumps, far)


def _fold_scores(found, laws, length):
    """Score ``(laws, series)`` of every law on the folds of a prefix of ``length``
    counts: the weighted mean |log error| of the next two counts, NaN for a law
    that any of these folds cannot fit or that is not positive on the prefix."""
    lowest = 3 if length >= 4 else 2
    folds = list(range(length - 1, lowest - 1, -1))[:_FOLDS]
    folds = [k for k in folds if k in found.errors]
    if not folds:
        return None
    total, weights = 0.0, 0.0
    for rank, k in enumerate(folds):
        steps = found.errors[k][:, :, k : min(k + _STEPS, length)]
        total = total + _FOLD_DECAY**rank * np.abs(steps).mean(axis=2)
        weights += _FOLD_DECAY**rank
    score = total / weights
    score[~found.valid[length]] = np.nan
    return score


def select(found, laws, length, noise, order, flat=None):
    """The law chosen for each series from the counts of a prefix.

    The best score wins unless a simpler law (earlier in ``order``) is within
    :data:`TOLERANCE` of it, or within the noise of the centres; a simpler law is
    taken then. A series whose prefix shows no trend beyond its noise (``flat``,
    :func:`no_trend`) is given the best level (a ``constant`` law) that can be
    scored, as the ensemble trusts the level of such measurements; the laws its
    unrestricted choice found plausible stay among its alternatives.

    Parameters
    ----------
    found : GroupSearch
    laws : list of Candidate
    length : int
        The prefix: the choice sees the ``length`` smallest counts.
    noise : ndarray of shape (series,)
        The noise margin of each series (log units).
    order : ndarray of int
        Indices of ``laws`` from the simplest.
    flat : ndarray of bool, shape (series,), optional
        The series whose prefix shows no trend.

    Returns
    -------
    chosen : ndarray of int, shape (series,)
        Index of the law chosen (-1 where none can be scored).
    score : ndarray of shape (laws, series) or None
    eligible : ndarray of bool, shape (laws, series)
        The laws within the margin (the plausible alternatives).
    """
    score = _fold_scores(found, laws, length)
    if score is None:
        size = found.coef.shape[1]
        return np.full(size, -1), None, np.zeros((len(laws), size), bool)
    chosen, eligible = _choose(score, found.far[length], noise, order)
    if flat is None or not flat.any():
        return chosen, score, eligible
    constant = np.array([law.kind == "constant" for law in laws])
    levels = np.where(constant[:, None], score, np.nan)
    trusted = flat & np.isfinite(levels).any(axis=0)
    if trusted.any():
        noise = np.broadcast_to(noise, trusted.shape)
        level, within = _choose(
            levels[:, trusted], found.far[length][:, trusted], noise[trusted], order
        )
        chosen[trusted] = level
        eligible[:, trusted] |= within
    return chosen, score, eligible


def _choose(score, far, noise, order):
    """The choice of :func:`select` from the scores ``(laws, series)``, and the
    laws within its margin; ``far`` are the laws' predictions beyond the prefix."""
    with np.errstate(all="ignore"):
        best = np.nanmin(np.where(np.isfinite(score), score, np.nan), axis=0)
    margin = np.maximum(TOLERANCE * best, noise)
    eligible = np.isfinite(score) & (score <= best + margin)
    unclear = ~(best <= np.maximum(PRECISE, noise))  # no law within the noise
    if TOP:
        ranks = np.argsort(
            np.argsort(np.where(np.isfinite(score), score, np.inf), axis=0), axis=0
        )
        eligible = eligible | (np.isfinite(score) & (ranks < TOP) & unclear[None, :])
    if CHOICE == "median":
        with np.errstate(all="ignore"):
            level = np.log(np.where(eligible, far, np.nan))
            middle = np.nanmedian(level, axis=0)
            gap = np.abs(level - middle)
        nearest = np.nanmin(gap, axis=0)
        ranked = (eligible & (gap <= nearest + 1e-12))[order]
    else:
        ranked = eligible[order]
    chosen = order[np.argmax(ranked, axis=0)]
    chosen = np.where(ranked.any(axis=0), chosen, -1)
    return chosen, eligible


def no_trend(group, length, jumps):
    """The series whose ``length`` smallest counts show no trend beyond their noise.

    The tests of :func:`~scaleprobe.models.laws.flat.trend_tests`, for every series
    of the group at once: the log-log slope and the order of the centres (four
    counts or more), and, where the series has repeated runs, the spread between
    the centres against the pooled spread of the runs (an F test on the logs); and
    one the ensemble does not make, their curvature (five counts or more): a long
    strong-scaling series that falls and then rises has no slope and no order, and
    its level missed CP2K's held-out counts by 25 % where the law it had otherwise
    missed them by 11 % (on the ensemble's known flat laws the test only took the
    level from 3 of 20 series more, bench_intervals.py). No test rejects "no
    trend" at :data:`~scaleprobe.models.laws.trend.NO_TREND_LEVEL`, at least one
    could be made, and no jump (:func:`~scaleprobe.models.laws.regime.find_jumps`)
    lies in the prefix.

    Parameters
    ----------
    group : SeriesGroup
    length : int
    jumps : list of list of dict
        The jumps of each series (:attr:`GroupSearch.jumps`).

    Returns
    -------
    ndarray of bool, shape (series,)
    """
    x = group.x[:length]
    logs = np.log(group.centre[:length])
    tests = []
    if length >= 4:
        tests += [slope_pvalues(np.log(x), logs), rank_pvalues(x, logs)]
    if length >= 5:
        tests.append(curvature_pvalues(np.log(x), logs))
    if length >= 2:
        tests.append(_replicate_pvalues(group, logs))
    if not tests:
        return np.zeros(group.size, dtype=bool)
    p = np.vstack(tests)
    tested = np.isfinite(p).any(axis=0)
    with np.errstate(invalid="ignore"):
        quiet = np.where(tested, np.fmin.reduce(p, axis=0), 0.0) > NO_TREND_LEVEL
    broken = np.array([any(j["index"] < length for j in js) for js in jumps], bool)
    return tested & quiet & ~broken


def _replicate_pvalues(group, logs):
    """P-values of "the centres differ no more than the runs do" (NaN without runs):
    the one-way analysis of variance on the logs, from the centres and the pooled
    spread of the runs of every count."""
    count = group.count[: logs.shape[0]]
    dof = (group.count - 1).sum(axis=0)
    mean = (count * logs).sum(axis=0) / count.sum(axis=0)
    between = (count * (logs - mean) ** 2).sum(axis=0) / (logs.shape[0] - 1)
    within = group.noise**2
    with np.errstate(divide="ignore", invalid="ignore"):
        p = f_pvalues(between / within, logs.shape[0] - 1, dof)
    p = np.where(within > 0, p, np.where(between > 0, 0.0, 1.0))
    return np.where(dof > 0, p, np.nan)
