"""The search behind PMNFSearch: candidate laws, extrapolation folds, batched scores.

The search works on configuration centres (see :mod:`scaleprobe.models.core.configs`)
with the relative weighted loss of :mod:`scaleprobe.models.laws.lsq`, the same loss the
chosen law is refitted with. Folds chain forward over the distinct values of ``p``:
fold ``k`` trains on the ``k`` smallest and tests on every larger one. A law with
``q`` coefficients is only ever fitted on folds with at least ``q + 1`` distinct
values of ``p`` (one degree of freedom left), and every law is scored on the same
folds, so laws of different sizes compete on equal terms.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from scipy.stats import f as f_dist

from .terms import Term

__all__ = ["ComboScorer", "complexity", "forward_folds", "usable_terms"]


def forward_folds(p, first):
    """Folds ``(train, test)`` training on the ``k >= first`` smallest values of ``p``.

    Parameters
    ----------
    p : ndarray
        Process count of every configuration.
    first : int
        Smallest number of distinct training values.

    Returns
    -------
    list of (ndarray, ndarray)

    Examples
    --------
    >>> import numpy as np
    >>> [(a.tolist(), b.tolist()) for a, b in forward_folds(np.array([1, 2, 4, 8]), 3)]
    [([0, 1, 2], [3])]
    """
    distinct = np.unique(p)
    folds = []
    for k in range(max(int(first), 1), distinct.size):
        limit = distinct[k - 1]
        train = np.flatnonzero(p <= limit)
        test = np.flatnonzero(p > limit)
        folds.append((train, test))
    return folds


def term_cost(term):
    """How unusual a term is for a scaling law (0 for the four common shapes).

    The common shapes of parallel programs (perfect scaling ``1/p``, tree
    collectives ``log2(p)``, linear collectives ``p``, serial parts ``1``) cost
    nothing. Otherwise each logarithm costs 1, a fractional exponent 1, and growth
    beyond linear 2 per unit of exponent: ``sqrt(p)``, ``p log2(p)`` and
    ``1/sqrt(p)`` cost 1, ``p^2`` costs 2, ``p^(2/3) log2(p)^2`` costs 3, ``p^3``
    costs 4.
    """
    exponent = term.p_exponent
    if exponent == 0 and term.log_exponent == 1:
        return 0.0
    cost = term.log_exponent + (0 if exponent in (-1, 0, 1) else 1)
    return cost + 2 * max(float(exponent) - 1, 0.0)


def complexity(terms):
    """Sort key of a law's simplicity (smaller is simpler).

    Fewer terms besides the constant first (Extra-P's normal form always offers
    ``c0``); then the summed :func:`term_cost`; then fewer coefficients (a law
    without the constant beats the same law with it); then slower growth
    (``p^i log2(p)^j`` grows by ``i + j / 10``); then simpler exponents.
    """
    constant = [t for t in terms if t.p_exponent == 0 and t.log_exponent == 0]
    growth = sum(
        float(t.p_exponent) + t.log_exponent / 10
        for t in terms
        if t.p_exponent > 0 or (t.p_exponent == 0 and t.log_exponent)
    )
    return (
        len(terms) - len(constant),
        round(sum(term_cost(t) for t in terms), 6),
        len(terms),
        round(growth, 6),
        sum(t.p_exponent.denominator for t in terms),
    )


def usable_terms(candidates, decreasing):
    """Indices of candidate terms allowed for the data.

    Terms falling with ``p`` are allowed only when the data fall somewhere
    (``decreasing``): an increasing series must not emulate a constant with
    ``1/p**k`` terms.
    """
    keep = []
    for i, term in enumerate(candidates):
        falls = term.p_exponent < 0
        if falls and not decreasing:
            continue
        keep.append(i)
    return keep


def data_decrease(p, y, n, noise):
    """Whether the centres fall anywhere by more than twice their noise."""
    order = np.argsort(p, kind="stable")
    logs = np.log(y[order])
    se = noise / np.sqrt(np.maximum(n[order], 1)) if np.isfinite(noise) else 0.01
    se = np.maximum(se, 0.005)
    running_max = np.maximum.accumulate(logs)
    drop = running_max - logs
    margin = 2 * np.sqrt(se**2 + np.max(se) ** 2)
    return bool(np.any(drop > margin))


class ComboScorer:
    """Extrapolation score of many term combinations at once.

    A combination whose weighted least-squares coefficients are all positive has
    them as its non-negative solution; any other combination has a term the
    non-negative fit would switch off, so the smaller law covers it and it scores
    ``inf``. That makes every combination of one size a batched linear solve.

    Parameters
    ----------
    phi : ndarray of shape (m, t)
        Candidate terms evaluated at the configurations.
    y, weights : ndarray of shape (m,)
        Centres and replicate counts.
    folds : list of (train, test)
    """

    def __init__(self, phi, y, weights, folds):
        self.folds = []
        phi = np.asarray(phi, dtype=float)
        root = np.sqrt(np.asarray(weights, dtype=float))
        for train, test in folds:
            A = phi[train] * (root[train] / y[train])[:, None]
            norm = np.linalg.norm(A, axis=0)
            norm[norm == 0] = 1.0
            A = A / norm
            self.folds.append(
                (
                    A.T @ A,
                    A.T @ root[train],
                    phi[test] / norm,
                    y[test],
                    np.asarray(weights, dtype=float)[test],
                )
            )

    def evaluate(self, combos, sigma, dof=np.inf, level=0.9):
        """Extrapolation error and its chi-square against the noise, per combination.

        Parameters
        ----------
        combos : ndarray of shape (c, q)
            Column indices of each combination.
        sigma : float
            Noise of one replicate (standard deviation of log time); NaN skips the
            noise test.
        dof : float, default=inf
            Degrees of freedom behind ``sigma``.
        level : float, default=0.9

        Returns
        -------
        error : ndarray of shape (c,)
            Mean over folds of the mean absolute log error on the test points
            (``inf`` when a fold's fit has a non-positive coefficient).
        passed : ndarray of shape (c,)
            Share of the folds whose held-out errors the noise explains: the squared
            log errors weighed by their full covariance (the measurement noise of
            each test centre plus the prediction's own noise propagated from the
            training centres, correlated between the points one fit predicts) stay
            below the ``level`` quantile of their law. Folds overlap (the largest
            point is tested by all), so a law is judged by the share, not a sum.
        folds : int
        """
        combos = np.asarray(combos, dtype=np.int64)
        error = np.zeros(len(combos))
        passed = np.zeros(len(combos))
        if not self.folds:
            return np.full(len(combos), np.inf), np.zeros(len(combos)), 0
        for gram, rhs, test_phi, test_y, test_n in self.folds:
            G = gram[combos[:, :, None], combos[:, None, :]]
            b = rhs[combos]
            with np.errstate(all="ignore"):
                try:
                    inverse = np.linalg.inv(G)
                except np.linalg.LinAlgError:
                    inverse = np.linalg.pinv(G)
                coef = np.einsum("cij,cj->ci", inverse, b)
                rows = test_phi[:, combos]  # (t, c, q)
                pred = np.einsum("tck,ck->ct", rows, coef)
                log_error = np.log(pred / test_y)
                err = np.mean(np.abs(log_error), axis=1)
                if np.isfinite(sigma):
                    # One fit predicts every test point of the fold, so their errors
                    # are correlated: use their full covariance (relative units).
                    cov = np.einsum("tci,cij,scj->cts", rows, inverse, rows)
                    cov /= pred[:, :, None] * pred[:, None, :]
                    cov += np.eye(test_y.size)[None] / test_n[None, :, None]
                    good = np.all(np.isfinite(cov), axis=(1, 2)) & np.all(
                        np.isfinite(log_error), axis=1
                    )
                    fold_chi = np.full(len(combos), np.inf)
                    if good.any():
                        solved = np.linalg.solve(cov[good], log_error[good][..., None])
                        fold_chi[good] = (
                            np.einsum("ct,ct->c", log_error[good], solved[..., 0])
                            / sigma**2
                        )
                else:
                    fold_chi = np.full(len(combos), np.nan)
            bad = ~np.all(coef > 0, axis=1) | ~np.isfinite(err)
            error += np.where(bad, np.inf, err)
            # Errors the noise explains: the fold's statistic stays below the level
            # quantile of t F(t, dof) (sigma itself is estimated on dof).
            limit = test_y.size * f_dist.ppf(level, test_y.size, max(dof, 1))
            passed += np.where(bad, 0.0, fold_chi <= limit)
        return error / len(self.folds), passed / len(self.folds), len(self.folds)

    def score(self, combos):
        """Mean over folds of the mean absolute log error (see :meth:`evaluate`)."""
        return self.evaluate(combos, np.nan)[0]


def combinations(indices, size, seeds=None):
    """All ``size``-subsets of ``indices``, or the extensions of ``seeds`` by one."""
    if seeds is None:
        return np.array(list(itertools.combinations(indices, size)), dtype=np.int64)
    grown = {
        tuple(sorted((*seed, k))) for seed in seeds for k in indices if k not in seed
    }
    return np.array(sorted(grown), dtype=np.int64).reshape(-1, size)


def candidate_terms(exponents, log_exponents, data):
    """Candidate terms, the constant first.

    Growing terms are ``p^i log2(p)^j`` for every positive ``i`` of ``exponents`` and
    ``j`` of ``log_exponents`` (and ``log2(p)^j`` alone). Falling terms are limited to
    what strong scaling can do: ``p^-i`` with ``0 < i <= 1`` and ``log2(p)/p``. A
    time falling faster than ``1/p`` would be a superlinear speedup, which the search
    does not offer: with few points such terms fit noise and wreck the extrapolation.
    """
    positive = sorted({Fraction(e) for e in exponents} - {0})
    terms = [Term(data=bool(data))]
    terms += [Term(data=bool(data), log_exponent=int(j)) for j in log_exponents if j]
    terms += [
        Term(p_exponent=i, log_exponent=int(j), data=bool(data))
        for i in positive
        for j in log_exponents
    ]
    falling = [i for i in positive if i <= 1]
    terms += [Term(p_exponent=-i, data=bool(data)) for i in falling]
    if 1 in log_exponents:
        terms.append(Term(p_exponent=Fraction(-1), log_exponent=1, data=bool(data)))
    return terms
