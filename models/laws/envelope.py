"""Prediction intervals from the laws the measurements cannot reject.

A projection far beyond the measured node counts is uncertain for two reasons: the
coefficients are noisy, and several laws describe the measurements equally well but
part ways further out. Both are covered by one construction, the *profile likelihood*
interval of the prediction (Venzon and Moolgavkar 1988; Pawitan 2001, "In All
Likelihood", ch. 2-3): the law's identity is a discrete parameter beside its
coefficients, and a (law, coefficients) pair is admitted when its relative loss
against the configuration centres exceeds the *smallest loss over all plausible laws*
by at most ``sigma**2 * chi2.ppf(level, 1)`` (``sigma**2 * f.ppf(level, 1, dof)`` when
``sigma`` is estimated with ``dof`` degrees of freedom), the likelihood-ratio bound of
one scalar. The interval is the range of the predictions of every admitted pair (see
:func:`scaleprobe.models.laws.lsq.consistent_range`, which computes it exactly for one
law). For one law with known noise and a prediction linear in the coefficients it is
the exact ``level`` interval of that prediction; when the data cannot tell two laws
apart, it spans both, however far they part.

An earlier rule admitted every law with ``loss <= sigma**2 * chi2.ppf(level, m)``
(``m`` configurations): a simultaneous (Scheffe-like) set for every function of the
coefficients at once, far wider than one prediction needs
(``chi2.ppf(0.9, 7) = 12.0`` against ``chi2.ppf(0.9, 1) = 2.71``), and admitting laws
much worse than the best.

With replicates, the range of the law is then widened by the scatter of a centre
measured like the training ones (:func:`measured_range`): the interval is where such
a measurement falls, the same thing the held-out measurements that calibrate it are.

The noise ``sigma`` (standard deviation of log time of one replicate) comes from the
replicates; when the fitted law fits worse than that (or there are no replicates) the
residual scatter is used instead (:func:`noise_level`), so a poor family widens the
interval instead of collapsing it onto the best of several bad laws.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import chi2, f

from . import design as _design
from .lsq import consistent_range, nnls_losses
from .terms import Term

__all__ = [
    "ENVELOPE_FAMILY",
    "NOISE_FLOOR",
    "budget",
    "family_forms",
    "forms_losses",
    "law_loss",
    "law_losses",
    "law_range",
    "measured_range",
    "noise_level",
    "own_range",
    "simultaneous_budget",
    "training_table",
]

#: Smallest noise assumed (0.2 %): timers and counters are never better than that.
NOISE_FLOOR = 0.002

#: Decreasing and growing terms of the plausible laws an interval considers.
ENVELOPE_FAMILY = {
    "decreasing": ("1/p", "1/sqrt(p)", "1/p^(2/3)", "log2(p)/p"),
    "growing": ("log2(p)", "sqrt(p)", "p", "p*log2(p)"),
}

#: Grid of the exponential bandwidth factor for laws with ``alpha^(100/bw)``.
ALPHA_GRID = np.linspace(1.0, 3.0, 21)


def alpha_grid(fitted=None, bounds=(1.0, 3.0)):
    """Values of ``alpha`` an interval tries: a coarse grid over ``bounds`` and a fine
    one (steps of 0.25 %) around the fitted value, where precise data confine it.

    Examples
    --------
    >>> grid = alpha_grid(1.12)
    >>> bool(1.12 in grid), bool(grid.min() >= 1.0)
    (True, True)
    """
    low, high = bounds
    grid = [np.linspace(low, high, 21)]
    if fitted is not None:
        grid.append(fitted * (1 + 0.0025 * np.arange(-20, 21)))
    values = np.unique(np.concatenate(grid))
    return values[(values >= low) & (values <= high)]


def training_table(var, y, weights=None):
    """Configurations of a law's variables with their centre, weight and spread.

    Parameters
    ----------
    var : dict of str to ndarray
        ``p`` and, when present, ``D`` and ``bandwidth``.
    y : ndarray
        Positive targets.
    weights : ndarray, default=None
        Replicates behind each row (a row with weight ``w`` counts as ``w`` equal
        measurements); the spread of replicates is then unknown.

    Returns
    -------
    pandas.DataFrame
        Columns ``p`` (``D``, ``bandwidth``), ``y`` (geometric mean), ``n``,
        ``log_sd``.
    """
    frame = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in var.items()})
    weight = np.ones(len(frame)) if weights is None else np.asarray(weights, float)
    frame["_w"] = weight
    frame["_wlog"] = weight * np.log(np.maximum(np.asarray(y, dtype=float), 1e-300))
    frame["_log"] = np.log(np.maximum(np.asarray(y, dtype=float), 1e-300))
    keys = [k for k in ("p", "D", "bandwidth") if k in frame]
    grouped = frame.groupby(keys, sort=True)
    table = grouped[["_w", "_wlog"]].sum().reset_index()
    table["y"] = np.exp(table["_wlog"] / table["_w"])
    table["n"] = table["_w"]
    if weights is None:
        table["log_sd"] = grouped["_log"].std().to_numpy()
    else:
        table["log_sd"] = np.nan
    return table[[*keys, "y", "n", "log_sd"]]


def replicate_noise(table):
    """Pooled standard deviation of log replicates (NaN without replicates)."""
    return replicate_noise_dof(table)[0]


def replicate_noise_dof(table):
    """Pooled replicate noise and its degrees of freedom (``sum(n - 1)``)."""
    n = table["n"].to_numpy(dtype=float)
    sd = table["log_sd"].to_numpy(dtype=float)
    ok = np.isfinite(sd) & (n > 1)
    if not ok.any():
        return math.nan, 0
    dof = float(np.sum(n[ok] - 1))
    return float(np.sqrt(np.sum((n[ok] - 1) * sd[ok] ** 2) / dof)), dof


def noise_level(replicate, loss, dof, replicate_dof=0):
    """Noise the interval assumes: replicates, or the residual scatter if larger.

    Parameters
    ----------
    replicate : float
        Pooled replicate noise (NaN when there are no replicates).
    loss : float
        Weighted relative loss of the fitted law on the configuration centres.
    dof : int
        Configurations minus fitted parameters.
    replicate_dof : float, default=0
        Degrees of freedom of ``replicate``.

    Returns
    -------
    sigma : float
        Standard deviation of log time of one replicate, at least
        :data:`NOISE_FLOOR`; NaN when it cannot be estimated. Without replicates it
        is an upper 90 % confidence bound of the residual scatter (few degrees of
        freedom make it large, on purpose).
    sigma_dof : float
        Degrees of freedom of the estimate (0 when it is already an upper bound),
        for :func:`budget`.
    """
    if dof >= 1:
        scatter = math.sqrt(loss / dof)
        upper = math.sqrt(loss / chi2.ppf(0.10, dof))
    else:
        scatter = upper = math.nan
    if math.isfinite(replicate):
        if math.isfinite(scatter) and scatter > replicate:
            sigma, sigma_dof = scatter, dof
        else:
            sigma, sigma_dof = replicate, replicate_dof
    elif math.isfinite(upper):
        sigma, sigma_dof = upper, 0
    else:
        return math.nan, 0
    if sigma < NOISE_FLOOR:
        return NOISE_FLOOR, 0
    return sigma, sigma_dof


def budget(sigma, level, dof=None):
    """Loss a law may exceed the best plausible law by and still be admitted.

    The profile likelihood bound of one scalar prediction (Venzon and Moolgavkar
    1988; Pawitan 2001): ``sigma**2 * chi2.ppf(level, 1)`` when ``sigma`` is known;
    with ``dof`` degrees of freedom behind an estimated ``sigma`` the likelihood ratio
    follows ``F(1, dof)`` instead, ``sigma**2 * f.ppf(level, 1, dof)``, which widens
    the bound when the noise itself is uncertain. :func:`family_range` adds it to the
    smallest loss of the family.

    Parameters
    ----------
    sigma : float
        Noise (standard deviation of log time of one replicate).
    level : float
        Nominal coverage, e.g. 0.9.
    dof : float, default=None
        Degrees of freedom of ``sigma`` (None or 0: known, or already an upper bound).

    Returns
    -------
    float

    Examples
    --------
    >>> round(budget(0.1, 0.9) / 0.01, 3), round(budget(0.1, 0.9, 4) / 0.01, 3)
    (2.706, 4.545)
    """
    if dof is None or not dof or not math.isfinite(dof):
        return float(sigma**2 * chi2.ppf(level, 1))
    return float(sigma**2 * f.ppf(level, 1, max(dof, 1)))


def simultaneous_budget(sigma, configurations, level, dof=None):
    """Largest loss of a law's coefficients in its simultaneous confidence set.

    ``sigma**2 * chi2.ppf(level, m)`` (``m`` configurations), or ``sigma**2 m F(m,
    dof)`` with an estimated ``sigma``: the coefficients the data cannot reject for
    every function of them at once (Scheffe's construction). :func:`own_range` uses
    it for a law alone, whose form a search chose on the same data: a bound for one
    prediction of the chosen form would ignore that choice.

    Parameters
    ----------
    sigma : float
        Noise (standard deviation of log time of one replicate).
    configurations : int
        Number of configurations ``m`` behind the fit.
    level : float
        Nominal coverage, e.g. 0.9.
    dof : float, default=None
        Degrees of freedom of ``sigma`` (None or 0: known).

    Returns
    -------
    float

    Examples
    --------
    >>> round(simultaneous_budget(0.1, 7, 0.9) / 0.01, 2)
    12.02
    """
    m = max(int(configurations), 1)
    if dof is None or not dof or not math.isfinite(dof):
        return float(sigma**2 * chi2.ppf(level, m))
    return float(sigma**2 * m * f.ppf(level, m, max(dof, 1)))


def own_range(table, var, prediction, limit, *, own, bandwidth, alpha=None):
    """Range of one law's coefficients whose loss stays within ``limit``.

    The law alone, without the plausible laws of the family (the parts of the
    traffic model, whose laws a search chose): ``limit`` comes from
    :func:`simultaneous_budget`.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`training_table`.
    var : dict of str to ndarray
        Variables of the points to predict.
    prediction : ndarray
        The law's predictions there.
    limit : float
        Largest admissible loss.
    own : sequence of str
        Term names of the law.
    bandwidth : bool
        Whether ``alpha`` is a fitted bandwidth factor (a fine grid is tried).
    alpha : float, default=None

    Returns
    -------
    low, high : ndarray
        Never narrower than ``prediction``.
    """
    low = high = np.asarray(prediction, dtype=float)
    alphas = alpha_grid(alpha) if bandwidth else None
    (form,) = parse_forms([list(own)])
    lo, hi = law_range(form, table, var, limit, alphas=alphas)
    return np.fmin(low, lo), np.fmax(high, hi)


def family_forms(max_coefficients, *, data=False, extra=()):
    """Term lists of the plausible laws (see :data:`ENVELOPE_FAMILY`).

    A constant, one term, a constant plus one term, a decreasing plus a growing
    term, and a constant plus both, limited to ``max_coefficients`` coefficients;
    ``extra`` forms (e.g. the selected law) are added.
    """
    decreasing = [*ENVELOPE_FAMILY["decreasing"]]
    growing = [*ENVELOPE_FAMILY["growing"]]
    forms = [("1",)] + [(t,) for t in decreasing + growing]
    forms += [("1", t) for t in decreasing + growing]
    forms += [(d, g) for d in decreasing for g in growing]
    forms += [("1", d, g) for d in decreasing for g in growing]
    prefix = "D*" if data else ""
    forms = [
        tuple(prefix + t if t != "1" else ("D" if data else "1") for t in f)
        for f in forms
    ]
    out = [f for f in forms if len(f) <= max_coefficients]
    out += [tuple(f) for f in extra if tuple(f) not in out]
    return out


#: Most cells (values of alpha x points x terms) of one stack of designs: a grid of
#: alpha is solved a block at a time, so that a projection to many points stays small.
_CELLS = 1 << 18


def law_range(terms, table, target_var, loss_budget, *, alphas=None):
    """Range of predictions of one form's consistent coefficient vectors.

    Parameters
    ----------
    terms : list of Term
    table : pandas.DataFrame
        From :func:`training_table`.
    target_var : dict of str to ndarray
        Variables of the points to predict.
    loss_budget : float
        Largest admissible loss (the smallest loss of the family plus
        :func:`budget`).
    alphas : sequence of float, default=None
        Values of ``alpha`` to try when a term depends on bandwidth (the union over
        them is returned); default :data:`ALPHA_GRID`.

    Returns
    -------
    low, high : ndarray
        NaN where the form has no consistent coefficients.
    """
    var = {
        k: table[k].to_numpy(dtype=float) for k in ("p", "D", "bandwidth") if k in table
    }
    y = table["y"].to_numpy(dtype=float)
    n = table["n"].to_numpy(dtype=float)
    needs_alpha = any(t.bandwidth for t in terms)
    grid = (alpha_grid() if alphas is None else alphas) if needs_alpha else [None]
    count = len(next(iter(target_var.values())))
    low, high = np.full(count, np.nan), np.full(count, np.nan)
    # the union over alpha: stacks of designs, each solved at once
    step = max(_CELLS // max(count * len(terms), 1), 1)
    for start in range(0, len(grid), step):
        block = grid[start : start + step]
        with np.errstate(all="ignore"):
            A = _design.design_matrices(terms, var, block)
            targets = _design.design_matrices(terms, target_var, block)
        finite = np.all(np.isfinite(A), axis=(1, 2)) & np.all(
            np.isfinite(targets), axis=(1, 2)
        )
        if finite.any():
            lo, hi = consistent_range(A[finite], y, n, targets[finite], loss_budget)
            low, high = np.fmin(low, lo), np.fmax(high, hi)
    return low, high


def law_loss(terms, table, *, alphas=None):
    """Smallest weighted relative loss of one form's non-negative coefficients.

    Parameters
    ----------
    terms : list of Term
    table : pandas.DataFrame
        From :func:`training_table`.
    alphas : sequence of float, default=None
        Values of ``alpha`` to try when a term depends on bandwidth (the least over
        them is returned); default :data:`ALPHA_GRID`.

    Returns
    -------
    float
        Infinite when no value of ``alpha`` gives a finite design.
    """
    return float(law_losses(terms, table, alphas=alphas)[1].min())


def law_losses(terms, table, *, alphas=None):
    """Least loss of one form at every value of ``alpha`` it is tried at.

    Parameters
    ----------
    terms : list of Term
    table : pandas.DataFrame
        From :func:`training_table`.
    alphas : sequence of float, default=None
        As for :func:`law_loss`.

    Returns
    -------
    grid : list
        The values of ``alpha`` (``[None]`` for a form without the bandwidth factor).
    losses : ndarray
        Least loss at each, infinite where the design is not finite. A value of
        ``alpha`` whose least loss exceeds a budget admits no coefficients:
        :func:`law_range` needs only the others.
    """
    return forms_losses([terms], table, alphas=alphas)[0]


def forms_losses(forms, table, *, alphas=None):
    """:func:`law_losses` of several forms, those with as many terms as one stack.

    Parameters
    ----------
    forms : list of list of Term
    table : pandas.DataFrame
        From :func:`training_table`.
    alphas : sequence of float, default=None
        As for :func:`law_loss`.

    Returns
    -------
    list of (grid, losses)
        One pair per form, in order.
    """
    var = {
        k: table[k].to_numpy(dtype=float) for k in ("p", "D", "bandwidth") if k in table
    }
    y = table["y"].to_numpy(dtype=float)
    n = table["n"].to_numpy(dtype=float)
    stacks = {}
    for index, terms in enumerate(forms):
        needs_alpha = any(t.bandwidth for t in terms)
        grid = [None]
        if needs_alpha:
            grid = list(alpha_grid() if alphas is None else alphas)
        with np.errstate(all="ignore"):
            A = _design.design_matrices(terms, var, grid)
        stacks.setdefault(len(terms), []).append((index, grid, A))
    out = [None] * len(forms)
    for members in stacks.values():
        A = np.concatenate([A for _, _, A in members])
        finite = np.all(np.isfinite(A), axis=(1, 2))
        losses = np.full(len(A), math.inf)
        if finite.any():
            losses[finite] = nnls_losses(A[finite], y, n)
        offsets = np.cumsum([0] + [len(grid) for _, grid, _ in members])
        for (index, grid, _), start, stop in zip(
            members, offsets[:-1], offsets[1:], strict=True
        ):
            out[index] = (grid, losses[start:stop])
    return out


def parse_forms(forms):
    """Term objects of term-name lists."""
    from .terms import parse_term

    return [[parse_term(t) for t in form] for form in forms]


def with_bandwidth(terms):
    """The same terms with the bandwidth factor on the communication ones."""
    return [
        Term(t.p_exponent, t.log_exponent, t.data, t.bandwidth or t.is_communication)
        if not (t.p_exponent == 0 and t.log_exponent == 0)
        else t
        for t in terms
    ]


def measured_range(low, high, centre, increment, runs):
    """Widen a profile range of the law to where a measured centre would fall.

    The profile range holds the noise-free law; a centre of ``runs`` new replicates
    scatters around it as well. Treating that centre as one more (unobserved)
    configuration of the profile (Pawitan 2001, ch. 16, predictive likelihood), a
    value is admitted when the law's loss plus the centre's, ``runs * r**2`` for a
    relative deviation ``r``, stays within ``increment`` of the least: for a law
    linear in its coefficients the half-width in log time grows from
    ``sqrt(increment * h)`` to ``sqrt(increment * (h + 1 / runs))``, which is
    applied to each side of ``[low, high]`` around ``centre``. The held-out
    measurements that calibrate an interval
    (:mod:`scaleprobe.models.evaluation.intervals`) are such centres, so their
    noise is not mistaken for an error of extrapolation.

    Parameters
    ----------
    low, high : ndarray
        Profile range of the law (positive).
    centre : ndarray
        The fitted law's prediction, inside ``[low, high]``.
    increment : float
        From :func:`budget`.
    runs : float
        Replicates behind a centre (the median of the training configurations).

    Returns
    -------
    low, high : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> low, high = measured_range(np.array([1.0]), np.array([1.0]), np.array([1.0]),
    ...                            0.01, 4)
    >>> np.round(np.log([high[0], 1 / low[0]]), 6).tolist()  # sqrt(0.01 / 4) a side
    [0.05, 0.05]
    """
    centre = np.asarray(centre, dtype=float)
    noise = increment / max(runs, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = np.log(centre / np.asarray(low, dtype=float))
        above = np.log(np.asarray(high, dtype=float) / centre)
        low = centre * np.exp(-np.sqrt(np.maximum(below, 0.0) ** 2 + noise))
        high = centre * np.exp(np.sqrt(np.maximum(above, 0.0) ** 2 + noise))
    return low, high


def _admitted_range(laws, table, var, bar, low, high):
    """Join to ``[low, high]`` the range of every (law, alpha) whose least loss is
    within ``bar``; a law or a value of alpha above it admits nothing and is not
    solved. ``laws`` holds ``(form, grid, losses)`` from :func:`forms_losses`."""
    for form, grid, losses in laws:
        kept = [a for a, loss in zip(grid, losses, strict=True) if loss <= bar]
        if kept:
            alphas = kept if kept[0] is not None else None
            lo, hi = law_range(form, table, var, bar, alphas=alphas)
            low, high = np.fmin(low, lo), np.fmax(high, hi)
    return low, high


def family_range(
    table,
    var,
    prediction,
    increment,
    *,
    own,
    data,
    bandwidth,
    alpha=None,
):
    """Profile likelihood range of the fitted law ``own`` and the plausible laws.

    The interval of a projection should not depend on which law was selected: it
    holds every law of :data:`ENVELOPE_FAMILY` (with the data-size factor when
    ``data``, the bandwidth factor on communication terms when ``bandwidth``) and
    the fitted one, each with at most one coefficient fewer than there are distinct
    process counts. The law is a discrete parameter of the profile: every (law,
    coefficients) pair whose loss is within ``increment`` (from :func:`budget`) of
    the smallest loss over all of them is admitted (Venzon and Moolgavkar 1988).

    When the configurations have replicates, the range is then widened by the noise
    of a centre measured like the training ones (:func:`measured_range`); without
    them the noise is an upper bound of the law's misfit, which the calibration on
    held-out counts measures, so it is not counted twice. A law chosen by a search
    on the same data, alone, takes :func:`own_range` instead.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`training_table`.
    var : dict of str to ndarray
        Variables of the points to predict.
    prediction : ndarray
        The fitted law's predictions there.
    increment : float
        From :func:`budget`.
    own : sequence of str
        Term names of the fitted law.
    data, bandwidth : bool
        Put the data-size factor, the bandwidth factor, on the family's laws.
    alpha : float, default=None
        The fitted bandwidth factor (a fine grid of ``alpha`` is tried around it).

    Returns
    -------
    low, high : ndarray
        Never narrower than ``prediction``.
    """
    distinct = np.unique(table["p"]).size
    forms = family_forms(max(distinct - 1, 1), data=data, extra=[own])
    alphas = alpha_grid(alpha) if bandwidth else None
    laws = [
        with_bandwidth(form)
        if bandwidth and tuple(t.name for t in form) != tuple(own)
        else form
        for form in parse_forms(forms)
    ]
    laws = [
        (form, grid, losses)
        for form, (grid, losses) in zip(
            laws, forms_losses(laws, table, alphas=alphas), strict=True
        )
    ]
    best = min(losses.min() for _, _, losses in laws)
    low = high = np.asarray(prediction, dtype=float)
    if not math.isfinite(best):
        return low, high
    low, high = _admitted_range(laws, table, var, best + increment, low, high)
    if not math.isfinite(replicate_noise(table)):
        # no replicates: the noise is the law's misfit, which calibration measures
        return low, high
    runs = float(np.median(table["n"].to_numpy(dtype=float)))
    return measured_range(low, high, prediction, increment, runs)
